// tempra/audio/train/trainable_amp.cpp: the architectures `tempra amp train` names.
#include "tempra/audio/train/trainable_amp.h"

#include <string>

#include "tempra/audio/train/lstm_graph.h"
#include "tempra/audio/train/wavenet_graph.h"

namespace tempra::audio {

std::unique_ptr<TrainableAmp> make_trainable_amp(ExecContext& ctx, std::string_view arch, uint64_t seed) {
  constexpr float kHeadScale = 0.02f;  // NAM's, for every stock WaveNet
  if (const auto wavenet = wavenet_preset(arch))
    return std::make_unique<TrainableWaveNet>(TrainableWaveNet::init(ctx, *wavenet, kHeadScale, seed));
  const std::string_view size = arch == "lstm" ? "standard" : (arch.starts_with("lstm-") ? arch.substr(5) : "");
  if (const auto lstm = lstm_preset(size))
    return std::make_unique<TrainableLstm>(TrainableLstm::init(ctx, *lstm, seed));
  return nullptr;
}

}  // namespace tempra::audio
