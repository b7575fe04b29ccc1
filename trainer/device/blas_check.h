// Detects whether this process runs LibTorch on Debian's reference BLAS, which makes it 7-27x
// slower than with OpenBLAS, so that a trainer can warn about it at start-up.
//
// Stateless functions that own nothing; safe to call from any thread. ReferenceBlasWarning reads
// /proc/self/maps; the classification below it is a pure function over a list of paths.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hetps {

enum class BlasKind {
  kNotLoaded,  // no libblas.so.* among the mapped files
  kReference,  // .../<arch>/blas/libblas.so.*: the Netlib reference implementation
  kOpenBlas,   // libblas.so.* from an .../openblas-*/ directory
  kOther,      // another libblas.so.* (BLIS, ATLAS, ...)
};

// "not loaded", "reference", "OpenBLAS", "other".
const char* BlasKindName(BlasKind kind);

// Classifies the BLAS among `mapped_paths`, paths of mapped files with symbolic links resolved as
// /proc/<pid>/maps shows them. Debian's libblas.so.3 is a chain of alternatives links, so the
// resolved path is what tells the implementations apart. When several libblas files are mapped,
// the reference one wins: the dynamic linker binds the BLAS symbols to one of them, and a
// reference copy anywhere in the process is worth a warning.
BlasKind ClassifyBlas(const std::vector<std::string>& mapped_paths);

// The warning for `mapped_paths` when ClassifyBlas finds the reference BLAS: it says so, what it
// costs and how to switch to OpenBLAS (scripts/install-deps.sh, or `update-alternatives --config
// libblas.so.3-<arch>` choosing openblas-openmp, <arch> taken from the path); std::nullopt
// otherwise.
std::optional<std::string> ReferenceBlasWarningFor(const std::vector<std::string>& mapped_paths);

// The distinct file paths mapped into this process, from /proc/self/maps; empty where that file
// does not exist (non-Linux) or cannot be read.
std::vector<std::string> MappedFilePaths();

// ReferenceBlasWarningFor(MappedFilePaths()): the warning when this process resolved
// libblas.so.3 to the reference BLAS, std::nullopt otherwise or where this cannot be told
// (non-Linux). Call it once LibTorch is loaded, which is at start-up for any program linking
// hetps_trainer: Debian's libtorch_cpu depends on libblas.so.3 directly.
std::optional<std::string> ReferenceBlasWarning();

}  // namespace hetps
