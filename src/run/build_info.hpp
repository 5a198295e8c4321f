#pragma once
// ptrain's version and the git commit it was built from (written at build time).
namespace ptrain {

struct BuildInfo {
  const char* version;  // e.g. "0.4.0"
  const char* commit;   // e.g. "a384d9a", with "-dirty" for uncommitted changes; "unknown" outside git
};

const BuildInfo& build_info();

}  // namespace ptrain
