// tests/serve/clients/sse.mjs: reading a server-sent-events body as it arrives (the load test
// and bench/serve_bench.mjs share it; the web page, one self-contained file, has its own).
// Yields each event's `data:` payload; stops reading after `limit` events (the caller leaves).
export async function* sseData(response, limit = Infinity) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "", count = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = event.split("\n").find((line) => line.startsWith("data: "));
      if (data === undefined) continue;
      yield data.slice(6);
      if (++count >= limit) {
        await reader.cancel();
        return;
      }
    }
  }
}
