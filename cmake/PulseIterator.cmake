# pulse_add_iterator(): compile a pulse iterator at build time and link the
# program into a target.
#
#   pulse_add_iterator(<target> <source.c>
#                      [NAME <cxx_name>]        # default: the iterator's name
#                      [ITERATOR <iterator>]    # when the file defines several
#                      [INCLUDE_DIRECTORIES <dir>...]
#                      [DEFINITIONS <NAME[=VALUE]>...]
#                      [SCRATCH_PAD_BYTES <n>])
#
# At build time pulse_iterc (built from src/compiler; pulse::iterc in an
# installed package, whose config includes this file) runs
# `clang -O2 -target bpf` on <source.c>, translates end()/next() into the pulse
# ISA and verifies the result; a rejected iterator fails the build with the
# compiler's diagnostics (file:line, function, BPF instruction).  It writes
#
#   <binary dir>/pulse_iterators/<cxx_name>.pulse   the encoded program
#   <binary dir>/pulse_iterators/<cxx_name>.cc      the program as a byte array
#   <binary dir>/pulse_iterators/pulse/iterators/<cxx_name>.h
#
# adds the .cc to <target> and the include directory to it, so C++ code does
#
#   #include "pulse/iterators/umap_find.h"
#   auto program = pulse::VerifiedProgram::FromBytes(pulse::iterators::umap_find());
#
# (the header also records the window size and longest path).  <cxx_name>
# defaults to the iterator's name as given to PULSE_END/PULSE_NEXT; pass NAME
# when that name is not known at configure time or differs.  Dependencies on
# headers the source includes are tracked (clang depfile, Ninja and Makefiles).
if(COMMAND pulse_add_iterator)
  return()
endif()

function(pulse_add_iterator target source)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "" "NAME;ITERATOR;SCRATCH_PAD_BYTES"
                        "INCLUDE_DIRECTORIES;DEFINITIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "pulse_add_iterator: unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  get_filename_component(src "${source}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set(name "${ARG_NAME}")
  if(NOT name)
    set(name "${ARG_ITERATOR}")
  endif()
  if(NOT name)
    # The iterator's name from PULSE_END(<name>, ...) in the source.
    file(STRINGS "${src}" end_lines REGEX "PULSE_END\\([A-Za-z_][A-Za-z0-9_]*")
    list(LENGTH end_lines n_end)
    if(NOT n_end EQUAL 1)
      message(FATAL_ERROR "pulse_add_iterator(${target} ${source}): found ${n_end} PULSE_END "
                          "declarations; pass ITERATOR <name> (and NAME <cxx_name>)")
    endif()
    string(REGEX MATCH "PULSE_END\\(([A-Za-z_][A-Za-z0-9_]*)" _ "${end_lines}")
    set(name "${CMAKE_MATCH_1}")
  endif()

  set(outdir "${CMAKE_CURRENT_BINARY_DIR}/pulse_iterators")
  set(out_pulse "${outdir}/${name}.pulse")
  set(out_cc "${outdir}/${name}.cc")
  set(out_h "${outdir}/pulse/iterators/${name}.h")
  set(out_dep "${outdir}/${name}.d")

  set(args "${src}" -o "${out_pulse}" --cxx-name "${name}" --embed-cc "${out_cc}"
           --embed-h "${out_h}")
  if(ARG_ITERATOR)
    list(APPEND args --iterator "${ARG_ITERATOR}")
  endif()
  if(ARG_SCRATCH_PAD_BYTES)
    list(APPEND args --scratch-pad-bytes "${ARG_SCRATCH_PAD_BYTES}")
  endif()
  foreach(dir IN LISTS ARG_INCLUDE_DIRECTORIES)
    get_filename_component(dir "${dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND args -I "${dir}")
  endforeach()
  foreach(def IN LISTS ARG_DEFINITIONS)
    list(APPEND args -D "${def}")
  endforeach()

  # Inside pulse's build the compiler is the pulse_iterc target; a user
  # project gets pulse::iterc and the installed headers from find_package.
  if(TARGET pulse_iterc)
    set(iterc pulse_iterc)
  else()
    set(iterc pulse::iterc)
  endif()
  if(PULSE_ITERATOR_INCLUDE_DIR)
    list(APPEND args -I "${PULSE_ITERATOR_INCLUDE_DIR}")
  endif()

  set(depfile_args)
  if(CMAKE_GENERATOR MATCHES "Ninja|Makefiles")
    list(APPEND args --depfile "${out_dep}" --depfile-target "${out_cc}")
    set(depfile_args DEPFILE "${out_dep}")
  endif()

  file(MAKE_DIRECTORY "${outdir}/pulse/iterators")
  add_custom_command(
    OUTPUT "${out_cc}" "${out_h}" "${out_pulse}"
    COMMAND "$<TARGET_FILE:${iterc}>" ${args}
    DEPENDS ${iterc} "${src}"
    ${depfile_args}
    COMMENT "Compiling pulse iterator ${name} (${source})"
    VERBATIM)
  target_sources(${target} PRIVATE "${out_cc}" "${out_h}")
  target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${outdir}>")
  # A custom command's rule lives in the directory that declares it.  When
  # the target was created elsewhere (e.g. the pulse_client layer, extended
  # from src/ds), a target here owns the rule and the target waits for it.
  get_target_property(target_dir ${target} SOURCE_DIR)
  if(NOT target_dir STREQUAL CMAKE_CURRENT_SOURCE_DIR)
    add_custom_target(${target}_iterator_${name} DEPENDS "${out_cc}" "${out_h}" "${out_pulse}")
    add_dependencies(${target} ${target}_iterator_${name})
  endif()
endfunction()
