// TempDir: a fresh directory under the system's temporary directory for one test, removed with
// everything in it when the object goes. Owned by one test thread.
#pragma once

#include <string>

namespace hetps::testing {

class TempDir {
 public:
  // `label` goes into the directory's name, to tell tests apart.
  explicit TempDir(const std::string& label);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace hetps::testing
