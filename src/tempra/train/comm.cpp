// tempra/train/comm.cpp: see comm.h. The MPI communicator is compiled only with TEMPRA_MPI.
#include "tempra/train/comm.h"

#include <cstdlib>

#ifdef TEMPRA_MPI
#include <mpi.h>

#include <cstdint>
#include <limits>
#include <span>

#include "tempra/core/error.h"
#endif

namespace tempra::train {

#ifdef TEMPRA_MPI
namespace {

// Set by mpirun (Open MPI's own variable, or the PMI/PMIx launch interface's).
bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr ||
         std::getenv("PMI_RANK") != nullptr;
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = 0;
    if (!initialized) MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<double> allgather(std::vector<double> mine) override { return gather<double>(mine, MPI_DOUBLE); }
  std::vector<float> allgather(std::vector<float> mine) override { return gather<float>(mine, MPI_FLOAT); }
  void abort(int code) override { MPI_Abort(MPI_COMM_WORLD, code); }

 private:
  // Counts first (they may differ by rank), then the values by MPI_Allgatherv.
  template <class T>
  std::vector<T> gather(std::span<const T> mine, MPI_Datatype type) {
    check(mine.size() <= size_t(std::numeric_limits<int>::max()), "mpi", "allgather of ", mine.size(),
          " values from one rank: MPI counts are int");
    const int count = int(mine.size());
    std::vector<int> counts(static_cast<size_t>(size_)), displacements(static_cast<size_t>(size_));
    MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      check(total <= std::numeric_limits<int>::max(), "mpi", "allgather of more than 2^31 values");
      displacements[size_t(r)] = int(total);
      total += counts[size_t(r)];
    }
    std::vector<T> out(static_cast<size_t>(total));
    MPI_Allgatherv(mine.data(), count, type, out.data(), counts.data(), displacements.data(), type, MPI_COMM_WORLD);
    return out;
  }

  int rank_ = 0, size_ = 1;
};

}  // namespace

Communicator& world() {
  if (!launched_by_mpirun()) return local_communicator();
  static MpiCommunicator mpi;
  return mpi;
}

bool built_with_mpi() { return true; }

#else

Communicator& world() { return local_communicator(); }
bool built_with_mpi() { return false; }

#endif

}  // namespace tempra::train
