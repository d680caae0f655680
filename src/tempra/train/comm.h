// tempra/train/comm.h: the processes one training run spans, and what they exchange.
//
// Contract:
// - A Communicator is `size` processes (ranks 0 .. size-1) running the same program on the same
//   data. The local one is a single process: it exchanges nothing, and allgather returns its
//   own values.
// - allgather: every rank passes its values (any count, zero included) and receives every rank's
//   values concatenated in rank order. It blocks until all ranks have called it, and all ranks
//   must make the same sequence of calls. Nothing is summed on the way: the caller reduces the
//   gathered values in an order of its choosing, so a reduction over N processes can be made
//   bit-identical to one process's (finetune.h, es.h).
// - world(): MPI_COMM_WORLD when the program was launched by mpirun and tempra was built with
//   MPI (the TEMPRA_MPI option, Debian's Open MPI); else the local communicator. MPI is
//   initialized on the first call (MPI_THREAD_FUNNELED: thread pools run beside it, and only
//   the calling thread talks to MPI) and finalized at exit; a program that mpirun did not
//   launch never initializes it.
#pragma once

#include <vector>

namespace tempra::train {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const { return 0; }
  virtual int size() const { return 1; }
  // `mine` by value: one process hands its values straight back, without a copy (a step's
  // gradients are batch x the adapters' size).
  virtual std::vector<double> allgather(std::vector<double> mine) { return mine; }
  virtual std::vector<float> allgather(std::vector<float> mine) { return mine; }
  // Ends every rank's process with `code` (MPI_Abort): what a rank that failed alone must call,
  // or the others wait for it forever. The local communicator has no others: it returns.
  virtual void abort(int code) { (void)code; }
};

// A single process's communicator, for runs and tests that exchange nothing.
inline Communicator& local_communicator() {
  static Communicator local;
  return local;
}

Communicator& world();

// Whether this build can run over MPI (TEMPRA_MPI).
bool built_with_mpi();

}  // namespace tempra::train
