# The git commit is taken at configure time; a dirty tree is marked so results never claim a clean commit.
set(TRAINSCOPE_GIT_COMMIT "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse HEAD WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                  OUTPUT_VARIABLE _commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0)
    set(TRAINSCOPE_GIT_COMMIT ${_commit})
    execute_process(COMMAND ${GIT_EXECUTABLE} diff --quiet HEAD WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} RESULT_VARIABLE _dirty)
    if(NOT _dirty EQUAL 0)
      string(APPEND TRAINSCOPE_GIT_COMMIT "-dirty")
    endif()
  endif()
endif()
