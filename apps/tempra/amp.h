// apps/tempra/amp.h: `tempra amp -m PROFILE.nam IN.wav OUT.wav`, a guitar signal through a NAM
// profile.
//
// Contract: reads the profile (tempra/audio/nam_file.h) and the input (any format libsndfile
// reads; --channel picks one channel of a multichannel file), applies --input-gain dB, runs the
// model in blocks of --block samples as an audio callback would (the output does not depend on
// the block size), applies --output-gain dB and, with --normalize, NAM's loudness normalization
// (the profile's `metadata.loudness` brought to -18 dB, as NAM's plugin does), and writes a mono
// 32-bit float WAV at the input's rate, atomically. Prints what ran and the real-time factor.
// An input whose rate differs from the profile's is refused (resample it first); bad options
// exit 2, unreadable or malformed files exit 1 naming the file and field.
#pragma once

#include "args.h"

namespace tempra::app {

int run_amp(const cli::Args& args);
cli::Command amp_command();

}  // namespace tempra::app
