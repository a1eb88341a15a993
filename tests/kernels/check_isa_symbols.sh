#!/bin/sh
# Fails when an object built with ISA flags (the files named *_avx2, *_avxvnni, *_avx512, *_amx)
# exports a weak (inline or template) symbol: the linker could pick that copy for code running on a CPU
# without the ISA. Their shared code (vec_*.h, amx_kernel.h) has internal linkage, and each
# reaches other code only through its KernelTable, a plain strong object. DW.ref.__gxx_personality_v0
# (the exception personality pointer that sanitizer builds emit) is data the runtime owns, not ISA
# code. Arguments: the object files of recur_kernels.
status=0
checked=0
for obj in "$@"; do
  case "$(basename "$obj")" in
    *_avx2.*|*_avxvnni.*|*_avx512.*|*_amx.*) ;;
    *) continue ;;
  esac
  checked=$((checked + 1))
  bad=$(nm -C --defined-only "$obj" | grep -E ' [WVu] ' | grep -vE 'DW\.ref\.__gxx_personality_v0')
  if [ -n "$bad" ]; then
    echo "$(basename "$obj") exports shared weak symbols:"
    echo "$bad"
    status=1
  fi
done
if [ "$checked" -eq 0 ]; then
  echo "no ISA object among the arguments: the file names no longer match *_avx2, *_avx512, *_amx"
  status=1
fi
echo "checked $checked ISA objects"
exit $status
