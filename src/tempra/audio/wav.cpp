// tempra/audio/wav.cpp
#include "tempra/audio/wav.h"

#include <sndfile.h>

#include <cstdio>

#include "tempra/core/error.h"
#include "tempra/io/atomic_write.h"

namespace tempra::audio {
namespace {
constexpr const char* kOp = "audio";
// Longer than any take a guitarist records (about 3 hours at 48 kHz mono): bounds the read.
constexpr int64_t kMaxSamples = int64_t(1) << 29;
}  // namespace

std::vector<float> AudioData::channel(int c) const {
  check(c >= 0 && c < channels, kOp, "channel ", c, " of a ", channels, "-channel signal");
  std::vector<float> out(static_cast<size_t>(frames()));
  for (int64_t i = 0; i < frames(); ++i) out[size_t(i)] = samples[size_t(i * channels + c)];
  return out;
}

AudioData read_audio(const std::filesystem::path& path) {
  SF_INFO info{};
  SNDFILE* file = sf_open(path.c_str(), SFM_READ, &info);
  if (!file) fail(kOp, path.string(), ": cannot read audio: ", sf_strerror(nullptr));
  struct Closer {
    SNDFILE* f;
    ~Closer() { sf_close(f); }
  } closer{file};
  check(info.channels >= 1 && info.channels <= 64, kOp, path.string(), ": ", info.channels, " channels");
  check(info.samplerate >= 1000 && info.samplerate <= 1000000, kOp, path.string(), ": sample rate ", info.samplerate,
        " Hz is outside 1000 ... 1000000");
  check(info.frames >= 0 && info.frames <= kMaxSamples / info.channels, kOp, path.string(), ": ", info.frames,
        " frames of ", info.channels, " channels is more than tempra reads (", kMaxSamples, " samples)");
  AudioData audio;
  audio.sample_rate = info.samplerate;
  audio.channels = info.channels;
  audio.samples.resize(size_t(info.frames * info.channels));
  const sf_count_t read = sf_readf_float(file, audio.samples.data(), info.frames);
  check(read == info.frames, kOp, path.string(), ": the header promises ", info.frames, " frames, ", read,
        " could be read (truncated?)");
  return audio;
}

void write_wav(const std::filesystem::path& path, std::span<const float> mono, int sample_rate) {
  check(sample_rate >= 1000 && sample_rate <= 1000000, kOp, "sample rate ", sample_rate, " Hz");
  io::write_atomically(path, kOp, [&](std::FILE* out, const std::string& temp_name) {
    SF_INFO info{};
    info.samplerate = sample_rate;
    info.channels = 1;
    info.format = SF_FORMAT_WAV | SF_FORMAT_FLOAT;
    std::fflush(out);
    SNDFILE* file = sf_open_fd(fileno(out), SFM_WRITE, &info, SF_FALSE);
    if (!file) fail(kOp, temp_name, ": cannot write WAV: ", sf_strerror(nullptr));
    const sf_count_t written = sf_writef_float(file, mono.data(), sf_count_t(mono.size()));
    const int closed = sf_close(file);
    check(written == sf_count_t(mono.size()) && closed == 0, kOp, temp_name, ": write failed");
  });
}

}  // namespace tempra::audio
