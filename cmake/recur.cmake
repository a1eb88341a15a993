# Shared build rules: warnings, sanitizers and the helpers every module uses.

# Designated initializers that leave members at their defaults are the point (style.md), so the
# missing-field-initializers warning is off.
set(RECUR_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wimplicit-fallthrough
                   -Wno-missing-field-initializers)
# GCC 12 at -O3 (CMAKE_BUILD_TYPE=Release) reports -Wrestrict on std::string inside libstdc++'s own
# char_traits (GCC bug 105329), which -Werror would turn into a failed Release build.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND RECUR_WARNINGS -Wno-restrict)
endif()
if(RECUR_WERROR)
  list(APPEND RECUR_WARNINGS -Werror)
endif()

if(RECUR_SANITIZE)
  # -O1 and line tables only (the sanitizers' own advice; reports keep file:line): the GCC ASan
  # build compiled 1.35-1.75x faster than at -O2 -g, which CI's 90 minutes need. The kernels keep
  # their -O3 (a source property, later on the command line), so their tests run at speed.
  add_compile_options(-O1 -g1)
  add_compile_options(-fsanitize=${RECUR_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${RECUR_SANITIZE})
  if(RECUR_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
endif()

# recur_module(NAME SOURCES ... DEPS ...): one static library per module, named recur_<NAME>.
function(recur_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS" ${ARGN})
  add_library(recur_${name} STATIC ${M_SOURCES})
  target_include_directories(recur_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(recur_${name} PRIVATE ${RECUR_WARNINGS})
  target_link_libraries(recur_${name} PUBLIC ${M_DEPS})
endfunction()

# recur_embed_files(OUT_VAR DIR NAMESPACE ns FUNCTION fn): every file under DIR (relative paths,
# sorted) compiled into a generated source whose path lands in OUT_VAR; `ns::fn()` returns their
# std::span<const recur::EmbeddedFile> (util/embedded_file.h).
function(recur_embed_files out_var dir)
  cmake_parse_arguments(E "" "NAMESPACE;FUNCTION;NAME" "" ${ARGN})
  file(GLOB_RECURSE rel RELATIVE ${dir} CONFIGURE_DEPENDS ${dir}/*)
  list(SORT rel)
  list(TRANSFORM rel PREPEND ${dir}/ OUTPUT_VARIABLE paths)
  list(JOIN rel "|" joined)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${E_NAME}.cc)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DNAMESPACE=${E_NAMESPACE} -DFUNCTION=${E_FUNCTION}
            -DBASE=${dir} -DFILES=${joined} -P ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
    DEPENDS ${paths} ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
    COMMENT "Embedding ${dir}"
    VERBATIM)
  set(${out_var} ${out} PARENT_SCOPE)
endfunction()

# recur_test(NAME SOURCES ... DEPS ...): one gtest binary registered with ctest.
function(recur_test name)
  cmake_parse_arguments(T "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_compile_options(${name} PRIVATE ${RECUR_WARNINGS})
  target_compile_definitions(${name} PRIVATE RECUR_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                                             RECUR_BINARY_DIR="${PROJECT_BINARY_DIR}")
  target_link_libraries(${name} PRIVATE ${T_DEPS} GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${T_LABELS}")
endfunction()
