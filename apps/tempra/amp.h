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
//
// `tempra amp train --input DI.wav --target AMP.wav [--arch standard|lite|feather|nano|lstm|...]`
// trains one of NAM's WaveNets or LSTMs on the pair with NAM's recipe (tempra/audio/train/amp_trainer.h): the pair is checked
// (rates, clipping, lengths), aligned (the latency estimated, or --latency) and split (the last
// --validation-seconds validate). Each epoch prints its loss, ESRs and an ETA; SIGINT stops after
// the current epoch. Writes the weights of the best validation ESR as a `.nam` (version 0.5.4,
// with NAM's metadata fields: date, names, latency calibration, validation_esr) and a PNG
// (amp_plot.h), both atomically; --log adds a CSV of every epoch. The output paths are checked
// before training (their folders exist, none names another file of the run); a run whose loss
// stops being finite ends there, writing the best finite epoch if there is one and exiting 1.
#pragma once

#include "args.h"

namespace tempra::app {

int run_amp(const cli::Args& args);
cli::Command amp_command();
int run_amp_train(const cli::Args& args);
cli::Command amp_train_command();

}  // namespace tempra::app
