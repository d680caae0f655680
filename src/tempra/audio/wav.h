// tempra/audio/wav.h: audio files in and out, through libsndfile.
//
// read_audio reads any file libsndfile knows (WAV, AIFF, FLAC, ...; 8-32 bit PCM or float) as
// float samples, interleaved by channel; a missing, truncated or unrecognized file is an Error
// naming the file and libsndfile's reason. write_wav writes mono 32-bit float WAV atomically: a
// reader sees the old file or the whole new one, and a failed write leaves nothing behind.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace tempra::audio {

struct AudioData {
  int sample_rate = 48000;
  int channels = 1;
  std::vector<float> samples;  // frames x channels, interleaved

  int64_t frames() const { return channels > 0 ? int64_t(samples.size()) / channels : 0; }
  // One channel's samples (0 <= channel < channels).
  std::vector<float> channel(int channel) const;
};

AudioData read_audio(const std::filesystem::path& path);
void write_wav(const std::filesystem::path& path, std::span<const float> mono, int sample_rate);

}  // namespace tempra::audio
