# ctest package_deb: builds the .deb of BUILD_DIR into a directory of its own with cpack and checks
# what it holds and declares. Run with cmake -P; see packaging/cpack.cmake for the variables.

foreach(var CPACK DPKG_DEB BUILD_DIR SOURCE_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "check-deb.cmake: ${var} is not set")
  endif()
endforeach()

set(out "${BUILD_DIR}/package-test")
file(REMOVE_RECURSE "${out}")
file(MAKE_DIRECTORY "${out}")

execute_process(COMMAND "${CPACK}" -G DEB -B "${out}" --config "${BUILD_DIR}/CPackConfig.cmake"
                WORKING_DIRECTORY "${BUILD_DIR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cpack -G DEB failed (${rc}):\n${log}")
endif()
file(GLOB debs "${out}/kernel-workbench_*.deb")
list(LENGTH debs count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "expected one kernel-workbench_*.deb in ${out}, found: ${debs}\n${log}")
endif()
message(STATUS "package: ${debs}")

execute_process(COMMAND "${DPKG_DEB}" -c "${debs}" RESULT_VARIABLE rc OUTPUT_VARIABLE listing ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "dpkg-deb -c failed: ${err}")
endif()
set(expected
    "./usr/bin/kernel-workbench"
    "./usr/bin/kwb"
    "./usr/share/applications/kernel-workbench.desktop"
    "./usr/share/icons/hicolor/scalable/apps/kernel-workbench.svg"
    "./usr/share/kernel-workbench/tasks/level1/01_square_matrix_multiplication.toml"
    "./usr/share/kernel-workbench/tasks/level2/"
    "./usr/share/kernel-workbench/tasks/level3/"
    "./usr/share/kernel-workbench/prompts/"
    "./usr/share/kernel-workbench/gpus/datasheets.json")
if(WITH_WORKER)
  list(APPEND expected "./usr/bin/kwb-worker")
endif()
foreach(path IN LISTS expected)
  string(FIND "${listing}" " ${path}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the package lacks ${path}:\n${listing}")
  endif()
endforeach()
# Nothing from the build or test tree slips in.
foreach(stray "kwb-fakeworker" "kwb-replayworker" "/tst_" "CMakeFiles")
  string(FIND "${listing}" "${stray}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "the package holds ${stray}:\n${listing}")
  endif()
endforeach()

execute_process(COMMAND "${DPKG_DEB}" -f "${debs}" Package Version Section Maintainer Depends
                RESULT_VARIABLE rc OUTPUT_VARIABLE fields ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "dpkg-deb -f failed: ${err}")
endif()
message(STATUS "control fields:\n${fields}")
foreach(pattern "Package: kernel-workbench" "Section: science" "Maintainer: [^\n]+<[^>]+@[^>]+>"
                "Depends: [^\n]*libqt6core6" "Depends: [^\n]*libqt6widgets6" "Depends: [^\n]*libqt6sql6-sqlite"
                "Depends: [^\n]*libc6")
  if(NOT fields MATCHES "${pattern}")
    message(FATAL_ERROR "control field missing or wrong (${pattern}):\n${fields}")
  endif()
endforeach()

if(DESKTOP_FILE_VALIDATE)
  execute_process(COMMAND "${DESKTOP_FILE_VALIDATE}" "${SOURCE_DIR}/packaging/kernel-workbench.desktop"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE msg ERROR_VARIABLE msg)
  if(NOT rc EQUAL 0 OR msg MATCHES "error")
    message(FATAL_ERROR "desktop-file-validate: ${msg}")
  endif()
endif()
file(REMOVE_RECURSE "${out}")
