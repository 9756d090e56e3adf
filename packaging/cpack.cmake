# A Debian package of what `cmake --install` lays down (docs/building.md, "Packaging"):
#   bin/kernel-workbench, bin/kwb, bin/kwb-worker (when KWB_BUILD_WORKER is on),
#   share/kernel-workbench/{tasks,prompts,gpus}, the desktop file and the icon.
# Included at the end of the top-level CMakeLists.txt, after every install() rule.
#
#   cmake --build build/release && (cd build/release && cpack -G DEB)
#
# The programs find their data relative to themselves (bin/../share/kernel-workbench: the
# worker's defaultTasksDir(), kwb's defaultPromptsDir() and defaultGpuTablePath()), so the
# package installs under /usr and needs no configuration.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kernel-workbench)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "Kernel Workbench")
set(KWB_PACKAGE_MAINTAINER "Kernel Workbench maintainers <maintainers@users.noreply.a-seed-fbd47d18.example>"
    CACHE STRING "Maintainer field of the Debian package")
set(CPACK_PACKAGE_CONTACT "${KWB_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_INSTALL_DIRECTORY kernel-workbench)
# Debug builds make packages too, but a package is for users: no symbols.
set(CPACK_STRIP_FILES TRUE)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # kernel-workbench_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
# Shared libraries come from dpkg-shlibdeps. Qt loads two plugins at run time that no ELF
# dependency names: the SQLite driver (run databases) and the SVG icon engine (the icon).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libqt6sql6-sqlite, libqt6svg6, xz-utils") # xz: the example study, unpacked at first open
# bwrap is run, not linked: the worker's OS sandbox (docs/sandbox.md); without it workers run
# unwrapped, with a warning.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "bubblewrap")
# The extended description (CPack puts the summary line first and indents the rest).
string(CONCAT _kwb_description
    "Kernel Workbench evaluates candidate CUDA kernels for KernelBench tasks in an\n"
    "isolated worker process (NVRTC compile, sandbox check, correctness, timing,\n"
    "profiling), places tasks and kernels on the roofline and drives a local\n"
    "OpenAI-compatible model through prompt regimes.\n"
    "\n"
    "kernel-workbench is the Qt desktop application, kwb the command line.")
if(TARGET kwb-worker)
  string(APPEND _kwb_description
      "\n\n"
      "kwb-worker needs the CUDA toolkit's NVRTC, CUPTI and runtime libraries where it\n"
      "was built against them (it carries their directory as RUNPATH, usually\n"
      "/usr/local/cuda/lib64) and libtorch; kernels run only with an NVIDIA driver.\n"
      "Without one, evaluations stop after the sandbox check with no_device.")
  # The worker's CUDA and libtorch libraries are usually not from Debian packages: install the
  # worker with the directories it was linked against as RUNPATH, and let dpkg-shlibdeps look
  # there (libraries without package information are left out of Depends).
  set_property(TARGET kwb-worker PROPERTY INSTALL_RPATH_USE_LINK_PATH ON)
  set(_kwb_private_dirs "")
  if(CUDAToolkit_LIBRARY_DIR)
    list(APPEND _kwb_private_dirs "${CUDAToolkit_LIBRARY_DIR}")
  endif()
  if(TORCH_INSTALL_PREFIX)
    list(APPEND _kwb_private_dirs "${TORCH_INSTALL_PREFIX}/lib")
  endif()
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${_kwb_private_dirs}")
else()
  string(APPEND _kwb_description
      "\n\n"
      "This build has no kwb-worker: point kwb and kernel-workbench at one built\n"
      "elsewhere (libtorch, CUDA toolkit) with KWB_WORKER=/path/to/kwb-worker.")
endif()
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "${_kwb_description}")

include(CPack)

# A test that builds the package and checks what it holds (about 10 s on a release build; it
# runs the install rules, so build everything first).
find_program(KWB_DPKG_DEB dpkg-deb)
if(KWB_BUILD_TESTS AND KWB_BUILD_GUI AND KWB_DPKG_DEB)
  find_program(KWB_DESKTOP_FILE_VALIDATE desktop-file-validate)
  add_test(NAME package_deb
           COMMAND ${CMAKE_COMMAND}
                   -DCPACK=${CMAKE_CPACK_COMMAND}
                   -DDPKG_DEB=${KWB_DPKG_DEB}
                   -DDESKTOP_FILE_VALIDATE=${KWB_DESKTOP_FILE_VALIDATE}
                   -DBUILD_DIR=${CMAKE_BINARY_DIR}
                   -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
                   -DWITH_WORKER=$<TARGET_EXISTS:kwb-worker>
                   -P ${PROJECT_SOURCE_DIR}/packaging/check-deb.cmake)
  set_tests_properties(package_deb PROPERTIES LABELS unit TIMEOUT 120)
endif()
