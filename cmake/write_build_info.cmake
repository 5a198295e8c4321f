# Writes OUT, a C++ file with ptrain's version and the git commit of SOURCE_DIR.
# Run at every build; the file is only rewritten when its text changes, so
# nothing recompiles unless the commit did.
execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
if(failed OR commit STREQUAL "")
  set(commit "unknown")
else()
  execute_process(COMMAND git -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT changes STREQUAL "")
    set(commit "${commit}-dirty")
  endif()
endif()
set(text "// Written by cmake/write_build_info.cmake at build time.
#include \"run/build_info.hpp\"

namespace ptrain {

const BuildInfo& build_info() {
  static const BuildInfo info{\"${VERSION}\", \"${commit}\"};
  return info;
}

}  // namespace ptrain
")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
