// apps/tempra/corpus.h: `tempra corpus --text PATH... --brown PATH... OUT_DIR`, a pretraining
// corpus: texts cleaned, deduplicated and split into training and validation shards
// (train/corpus.h).
//
// Contract: each --text is a file or a folder (every file below it, in sorted order); files named
// *.rst or *.rst.txt are read as reStructuredText, others as plain text. Each --brown is a file
// or a folder of the Brown corpus's tagged files (names of two letters and two digits, "ca01"; a
// folder's other files are skipped). Every file is one document. OUT_DIR receives train_NNN.txt
// and val_NNN.txt (--val-fraction of the documents, --shard-mb per shard); a summary goes to
// stdout. Exits 1 naming the file for an unreadable file or one that is not UTF-8, and when
// nothing or no validation text is left; 2 for a bad command line.
#pragma once

#include "args.h"

namespace tempra::app {

cli::Command corpus_command();
int run_corpus(const cli::Args& args);

}  // namespace tempra::app
