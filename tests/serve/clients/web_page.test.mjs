// tests/serve/clients/web_page.test.mjs: the web chat page at / in headless Chromium (Debian's
// chromium, driven by puppeteer-core): it loads with the model's name, sends a message, shows the
// streamed answer and the tokens/s line, keeps the conversation across a reload, and the Stop
// button is enabled while a stream runs. TEMPRA_SCREENSHOT: where to save a screenshot.
import { test } from "node:test";
import assert from "node:assert/strict";
import puppeteer from "puppeteer-core";

test("the chat page streams an answer in Chromium", async () => {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 900, height: 600 });
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(process.env.TEMPRA_BASE + "/", { waitUntil: "networkidle0" });
    await page.waitForFunction(() => document.getElementById("model").textContent !== "…");
    assert.equal(await page.$eval("#model", (e) => e.textContent), process.env.TEMPRA_MODEL);

    await page.type("#input", "What is the weather at station 42?");
    await page.keyboard.press("Enter");
    await page.waitForSelector(".assistant[data-state=done]", { timeout: 30000 });
    const answer = await page.$eval(".assistant .answer", (e) => e.textContent);
    assert.match(answer, /get_weather/);
    assert.equal(await page.$eval(".assistant details", (e) => e.textContent), "thinkingLet me think");
    assert.match(await page.$eval(".assistant .stats", (e) => e.textContent), /tokens\/s/);
    assert.equal(await page.$eval("#stop", (e) => e.disabled), true);
    if (process.env.TEMPRA_SCREENSHOT) await page.screenshot({ path: process.env.TEMPRA_SCREENSHOT });

    await page.reload({ waitUntil: "networkidle0" });
    const kept = await page.$$eval(".msg", (els) => els.map((e) => e.className));
    assert.deepEqual(kept, ["msg user", "msg assistant"]);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
  }
});
