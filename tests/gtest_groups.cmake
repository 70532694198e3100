# Writes a test binary's ctest entries from its own --gtest_list_tests: one entry per suite, so a
# suite's tests share one process start (each start loads LibTorch: most of a second on 2 cores),
# and one entry per slow test, started first (COST) so a core does not idle at the end.
# Run after each link (tests/CMakeLists.txt, grassaudit_test) in script mode:
#   cmake -D EXE=... -D NAME=... -D QUICK=... -D SLOW=... -D WORKDIR=... -D OUT=... -P gtest_groups.cmake
# QUICK and SLOW are gtest filters (patterns joined by ':'). A suite's tests that QUICK matches
# form the entry `Suite` labelled quick; the others `Suite` (or `Suite.more` beside a quick part);
# each test SLOW matches is its own entry `Suite.Test`. Every listed test is in exactly one entry.
# An entry passes when its tests pass, and reads as skipped when all of them skipped
# (tests/support/gtest_main.cpp exits 77 then); gtest's output names each test either way.

function(filter_regex filter out)
  string(REPLACE ":" ";" patterns "${filter}")
  set(alts "")
  foreach(p IN LISTS patterns)
    string(REGEX REPLACE "([.+^$()|\\[\\]])" "\\\\\\1" p "${p}")
    string(REPLACE "*" ".*" p "${p}")
    string(REPLACE "?" "." p "${p}")
    list(APPEND alts "^${p}$")
  endforeach()
  string(REPLACE ";" "|" alts "${alts}")
  set(${out} "${alts}" PARENT_SCOPE)
endfunction()

execute_process(COMMAND "${EXE}" --gtest_list_tests WORKING_DIRECTORY "${WORKDIR}" TIMEOUT 60
                OUTPUT_VARIABLE listing RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --gtest_list_tests failed (${rc}): ${err}")
endif()
filter_regex("${QUICK}" quick_re)
if(SLOW)
  filter_regex("${SLOW}" slow_re)
endif()

set(env "OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1;OMP_WAIT_POLICY=PASSIVE")
set(script "# Written by tests/gtest_groups.cmake from ${NAME} --gtest_list_tests.\n")
function(add_entry entry tests props)
  string(REPLACE ";" ":" filter "${tests}")
  string(APPEND script "add_test([==[${entry}]==] [==[${EXE}]==] [==[--gtest_filter=${filter}]==])\n")
  string(APPEND script "set_tests_properties([==[${entry}]==] PROPERTIES WORKING_DIRECTORY [==[${WORKDIR}]==] "
                       "SKIP_RETURN_CODE 77 ENVIRONMENT [==[${env}]==] ${props})\n")
  set(script "${script}" PARENT_SCOPE)
endfunction()

string(REPLACE "\n" ";" lines "${listing}")
set(suites "")
set(suite "")
foreach(line IN LISTS lines)
  string(REGEX REPLACE " *#.*" "" line "${line}")
  if(line STREQUAL "")
    continue()
  elseif(line MATCHES "^  +(.+)$")
    list(APPEND tests_of_${suite} "${CMAKE_MATCH_1}")
  else()
    string(REGEX REPLACE "\\.$" "" suite "${line}")
    list(APPEND suites "${suite}")
  endif()
endforeach()

foreach(suite IN LISTS suites)
  set(quick "")
  set(rest "")
  foreach(test IN LISTS tests_of_${suite})
    set(full "${suite}.${test}")
    if(SLOW AND full MATCHES "${slow_re}")
      add_entry("${full}" "${full}" "COST 1000")
    elseif(full MATCHES "${quick_re}")
      list(APPEND quick "${full}")
    else()
      list(APPEND rest "${full}")
    endif()
  endforeach()
  if(quick)
    add_entry("${suite}" "${quick}" "LABELS quick")
  endif()
  if(rest)
    if(quick)
      add_entry("${suite}.more" "${rest}" "")
    else()
      add_entry("${suite}" "${rest}" "")
    endif()
  endif()
endforeach()
file(WRITE "${OUT}.tmp" "${script}")
file(RENAME "${OUT}.tmp" "${OUT}")
