# hwloc (libhwloc-dev: the cores and NUMA nodes of src/topology/), found by
# its header and library as the target ptrain::hwloc: hwloc has no CMake
# package, and pkg-config is not on every machine ptrain builds on (the
# offline bundle's). Included by the build and by the installed package.
if(NOT TARGET ptrain::hwloc)
  find_path(PTRAIN_HWLOC_INCLUDE_DIR hwloc.h REQUIRED)
  find_library(PTRAIN_HWLOC_LIBRARY hwloc REQUIRED)
  add_library(ptrain::hwloc INTERFACE IMPORTED)
  set_target_properties(ptrain::hwloc PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${PTRAIN_HWLOC_INCLUDE_DIR}"
                                                 INTERFACE_LINK_LIBRARIES "${PTRAIN_HWLOC_LIBRARY}")
endif()
