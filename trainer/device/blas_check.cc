#include "trainer/device/blas_check.h"

#include <fstream>
#include <set>

namespace hetps {
namespace {

struct PathParts {
  std::string directory;       // "/usr/lib/x86_64-linux-gnu/blas"
  std::string directory_name;  // "blas"
  std::string file_name;       // "libblas.so.3.11.0"
};

PathParts Split(const std::string& path) {
  PathParts parts;
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) {
    parts.file_name = path;
    return parts;
  }
  parts.directory = path.substr(0, slash);
  parts.file_name = path.substr(slash + 1);
  const size_t parent_slash = parts.directory.rfind('/');
  parts.directory_name =
      parent_slash == std::string::npos ? parts.directory : parts.directory.substr(parent_slash + 1);
  return parts;
}

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// Both Debian's reference libblas and every alternative install a file named libblas.so.*;
// OpenBLAS's own libopenblas*.so is not what libtorch binds against, so it alone decides nothing.
bool IsLibBlas(const PathParts& parts) {
  return StartsWith(parts.file_name, "libblas.so");
}

// The multiarch triplet ("x86_64-linux-gnu") is the directory above .../blas/.
std::string ArchOf(const PathParts& reference) {
  const PathParts parent = Split(reference.directory);
  return parent.directory_name.empty() ? "<arch>" : parent.directory_name;
}

bool IsReferenceBlas(const PathParts& parts) {
  return IsLibBlas(parts) && parts.directory_name == "blas";
}

}  // namespace

const char* BlasKindName(BlasKind kind) {
  switch (kind) {
    case BlasKind::kNotLoaded:
      return "not loaded";
    case BlasKind::kReference:
      return "reference";
    case BlasKind::kOpenBlas:
      return "OpenBLAS";
    case BlasKind::kOther:
      return "other";
  }
  return "other";
}

BlasKind ClassifyBlas(const std::vector<std::string>& mapped_paths) {
  BlasKind kind = BlasKind::kNotLoaded;
  for (const std::string& path : mapped_paths) {
    const PathParts parts = Split(path);
    if (!IsLibBlas(parts)) continue;
    if (IsReferenceBlas(parts)) return BlasKind::kReference;
    if (StartsWith(parts.directory_name, "openblas")) {
      kind = BlasKind::kOpenBlas;
    } else if (kind == BlasKind::kNotLoaded) {
      kind = BlasKind::kOther;
    }
  }
  return kind;
}

std::optional<std::string> ReferenceBlasWarningFor(const std::vector<std::string>& mapped_paths) {
  for (const std::string& path : mapped_paths) {
    const PathParts parts = Split(path);
    if (!IsReferenceBlas(parts)) continue;
    const std::string arch = ArchOf(parts);
    return "LibTorch is using the reference BLAS (" + path +
           "), with which training runs 7-27x slower than with OpenBLAS. Install OpenBLAS with "
           "scripts/install-deps.sh, or run `sudo update-alternatives --config libblas.so.3-" +
           arch +
           "` and choose openblas-openmp (install libopenblas0-openmp first if it is not "
           "listed).";
  }
  return std::nullopt;
}

std::vector<std::string> MappedFilePaths() {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::string> paths;
  if (!maps) return paths;
  std::set<std::string> seen;
  std::string line;
  while (std::getline(maps, line)) {
    // Fields: address perms offset dev inode [path]; the path is everything from the first '/'
    // after the inode, and may itself contain spaces.
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (seen.insert(path).second) paths.push_back(std::move(path));
  }
  return paths;
}

std::optional<std::string> ReferenceBlasWarning() {
  return ReferenceBlasWarningFor(MappedFilePaths());
}

}  // namespace hetps
