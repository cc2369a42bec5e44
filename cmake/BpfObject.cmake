# bpf_object(NAME SOURCE [DEFINES NAME=VALUE...]): compile one BPF C file into
# NAME.bpf.o and a libbpf skeleton NAME.skel.h, and create the interface target
# NAME_skel that a user program links to get the skeleton's include path and
# libbpf. DEFINES (passed as -D) build one source several ways.
#
# A function, not a macro: nothing leaks between calls. Header dependencies
# come from clang's depfile, so editing an included header rebuilds the object.

set(BPF_CLANG clang-19 CACHE STRING "clang used for BPF objects")
set(BPF_TOOLS_DIR "${IOURING_BPF_BUILD}/tools")
set(BPF_BPFTOOL "${BPF_TOOLS_DIR}/bin/bpftool")
set(BPF_VMLINUX_H "${IOURING_BPF_BUILD}/vmlinux.h")

foreach(f "${BPF_BPFTOOL}" "${BPF_VMLINUX_H}" "${BPF_TOOLS_DIR}/root/lib/libbpf.a")
  if(NOT EXISTS "${f}")
    message(FATAL_ERROR "${f} is missing: build through the top-level Makefile "
                        "(make check / make demo), which builds it first")
  endif()
endforeach()

# libbpf from the kernel tree, linked statically so test binaries run in the
# guest without library paths.
add_library(iouring_bpf_libbpf STATIC IMPORTED GLOBAL)
set_target_properties(iouring_bpf_libbpf PROPERTIES
  IMPORTED_LOCATION "${BPF_TOOLS_DIR}/root/lib/libbpf.a"
  INTERFACE_INCLUDE_DIRECTORIES "${BPF_TOOLS_DIR}/root/include"
  INTERFACE_LINK_LIBRARIES "elf;z")

# The BPF target has no libc headers of its own; let it see the host's
# system include directories after ours, as libbpf-bootstrap does.
execute_process(COMMAND ${BPF_CLANG} -v -E - INPUT_FILE /dev/null
                OUTPUT_QUIET ERROR_VARIABLE _clang_v)
string(REGEX MATCH "#include <...> search starts here:\n(.*)End of search list" _m "${_clang_v}")
string(REGEX MATCHALL "/[^\n]*" _sys_dirs "${CMAKE_MATCH_1}")
set(BPF_SYS_INCLUDES "")
foreach(d ${_sys_dirs})
  string(STRIP "${d}" d)
  list(APPEND BPF_SYS_INCLUDES "-idirafter" "${d}")
endforeach()
set(BPF_SYS_INCLUDES "${BPF_SYS_INCLUDES}" CACHE INTERNAL "")

function(bpf_object name source)
  cmake_parse_arguments(B "" "" "DEFINES" ${ARGN})
  set(defines "")
  foreach(d ${B_DEFINES})
    list(APPEND defines "-D${d}")
  endforeach()
  get_filename_component(src "${source}" ABSOLUTE)
  set(out "${CMAKE_CURRENT_BINARY_DIR}")
  set(tmp_obj "${out}/${name}.tmp.bpf.o")
  set(obj "${out}/${name}.bpf.o")
  set(skel "${out}/${name}.skel.h")
  get_filename_component(vmlinux_dir "${BPF_VMLINUX_H}" DIRECTORY)

  add_custom_command(
    OUTPUT "${tmp_obj}"
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_x86 -mcpu=v3
            -Wall -Werror
            -I "${vmlinux_dir}"
            -I "${BPF_TOOLS_DIR}/root/include"
            -I "${CMAKE_SOURCE_DIR}/bpf/include"
            ${BPF_SYS_INCLUDES}
            ${defines}
            -MD -MF "${tmp_obj}.d" -MT "${tmp_obj}"
            -c "${src}" -o "${tmp_obj}"
    DEPENDS "${src}" "${BPF_VMLINUX_H}"
    DEPFILE "${tmp_obj}.d"
    COMMENT "BPF ${name}.bpf.o"
    VERBATIM)
  add_custom_command(
    OUTPUT "${obj}" "${skel}"
    COMMAND "${BPF_BPFTOOL}" gen object "${obj}" "${tmp_obj}"
    COMMAND sh -c "\"$1\" gen skeleton \"$2\" name \"$3\" > \"$4\"" sh "${BPF_BPFTOOL}" "${obj}" "${name}" "${skel}"
    DEPENDS "${tmp_obj}" "${BPF_BPFTOOL}"
    COMMENT "BPF skeleton ${name}.skel.h"
    VERBATIM)
  add_custom_target(${name}_bpf DEPENDS "${obj}" "${skel}")

  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_bpf)
  target_include_directories(${name}_skel INTERFACE "${out}")
  target_link_libraries(${name}_skel INTERFACE iouring_bpf_libbpf)
  set_target_properties(${name}_bpf PROPERTIES BPF_OBJECT "${obj}")
endfunction()
