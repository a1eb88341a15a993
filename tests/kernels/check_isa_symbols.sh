#!/bin/sh
# Fails when an object built with ISA flags (matmul_*, vec_*, peak_*) exports a weak (inline or
# template) symbol outside its own ISA namespace: the linker could pick that copy for code running
# on a CPU without the ISA. DW.ref.__gxx_personality_v0 (the exception personality pointer that
# sanitizer builds emit) is data the runtime owns, not ISA code. Arguments: the object files of
# recur_kernels.
status=0
for obj in "$@"; do
  case "$(basename "$obj")" in
    matmul_*|vec_*|peak_*) ;;
    *) continue ;;
  esac
  bad=$(nm -C --defined-only "$obj" | grep -E ' [WVu] ' | grep -vE 'detail::(avx2|avx512)::|DW\.ref\.__gxx_personality_v0')
  if [ -n "$bad" ]; then
    echo "$(basename "$obj") exports shared weak symbols:"
    echo "$bad"
    status=1
  fi
done
exit $status
