#!/usr/bin/env bash
# The CUDA backend's check on a lent GPU machine, and its rehearsal on a machine without one.
#
#   scripts/gpu-check.sh --prepare [DIR]   here (Debian 12, apt): download the .debs of the libraries
#                                          the GPU build cannot do without into DIR (default .gpu-debs),
#                                          check that they and the working tree fit the 64 MiB a device
#                                          call carries
#   scripts/gpu-check.sh [DIR]             on the GPU machine, from the repository's root, DIR carried:
#                                          unpack DIR into a prefix, build the GPU path (no GUI, CUDA on,
#                                          cuBLAS/cuDNN/NCCL from the toolkit beside nvcc, else from
#                                          NVIDIA's Python wheels), run the CUDA tests, train gpt-tiny
#                                          and llama-tiny on one GPU in bf16 with --check, print measured
#                                          against predicted per iteration and per operator beside
#                                          PyTorch's step time. Without a GPU (no nvidia-smi, nvidia-smi
#                                          failing, or no nvcc) it says why it skips and exits 0.
#   scripts/gpu-check.sh --rehearse [DIR]  here: the same build, tests and training with CUDA off and the
#                                          CPU backend started through mpirun (the CUDA backend's launch
#                                          path), against DIR's packages only: the system's copies of
#                                          them are hidden in a private mount namespace (needs root).
#
# Such a machine (docs: /work/.library/device/ in this workplace) is bare: nvcc, CMake, ninja, Python
# with PyTorch and NVIDIA's wheels, but no Qt, Z3, SQLite, MPI, OpenBLAS, Graphviz or JSON/format
# libraries, and no network. Exit status: 0 success or skip, 1 failure (with a message). A model
# with an operator the executor cannot run on any backend (llama-tiny's grouped-query and rotary
# attention, today) is reported as a gap, not a failure of the GPU path.
#
# Environment: GPU_CHECK_WORK (work folder: the prefix, the build, the results; default build-gpu/
# on the GPU machine, /tmp/unity-gpu-check-rehearsal for --rehearse), GPU_CHECK_JOBS (build jobs,
# default nproc), GPU_CHECK_OUT (a folder that gets the results and logs, e.g. the device's $OUT),
# GPU_CHECK_MACHINE (the preset the plans are made for; default from the GPU's name),
# GPU_CHECK_ITERATIONS (measured iterations, default 20), GPU_CHECK_PYTHON (a python3 with PyTorch),
# GPU_CHECK_CMAKE_ARGS (extra configure arguments), GPU_CHECK_NO_HIDE=1 (--rehearse without hiding),
# GPU_CHECK_REHEARSE_CUDA=1 (--rehearse compiles the CUDA backend too, where nvcc and the CUDA
# libraries exist without a GPU).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
script=$root/scripts/gpu-check.sh
helper=$root/scripts/gpu_check.py

# The Debian 12 packages carried to the GPU machine: what the reduced build (UNITY_GUI=OFF,
# UNITY_MIMALLOC=OFF) finds with find_package/pkg-config, plus every shared library those need at run
# time that a bare machine lacks (--prepare checks this: only glibc, libstdc++, libgcc and zlib are
# assumed there).
packages=(
  # core: JSON, formatting, hash maps, the CLI's parser
  nlohmann-json3-dev libfmt-dev libfmt9 libabsl-dev libabsl20220623 libcli11-dev
  # core: ONNX import
  libonnx-dev libonnx1 libonnxifi libprotobuf-dev libprotobuf32
  # projects (the SQLite store), rules (the Z3 verifier), the CLI's Graphviz layout: linked by `unity`
  libsqlite3-dev libsqlite3-0 libz3-dev libz3-4
  libgraphviz-dev libgvc6 libcgraph6 libcdt5 libpathplan4 libltdl7 libexpat1
  # executor: mpirun starts the ranks of every CUDA run and NCCL is bootstrapped over MPI; OpenBLAS
  # is the CPU backend that --check's one-rank reference runs on
  libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common
  libhwloc15 libudev1 libevent-core-2.1-7 libevent-pthreads-2.1-7 libpmix2 libmunge2
  libopenblas-pthread-dev libopenblas0-pthread libgfortran5 libquadmath0
  # tests (GoogleTest), and pkg-config for OpenBLAS and Graphviz
  libgtest-dev pkgconf pkgconf-bin libpkgconf3
)
# Shared libraries assumed on any machine that builds C++ (not carried).
base_libraries=" ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1
  libresolv.so.2 libutil.so.1 libstdc++.so.6 libgcc_s.so.1 libz.so.1 "
# Plugins, and Open MPI's libraries that only its plugins load: loaded on demand, so a missing library
# of theirs is no failure (Open MPI's InfiniBand/UCX/OFI transports, Graphviz's renderers and PMIx's
# extras are not used on one node).
plugin_paths="openmpi/lib/openmpi3/* graphviz/* pmix2/lib/pmix/* libmca_common_*"
carry_limit_mib=64
multiarch=x86_64-linux-gnu
# The CUDA tests (tests/executor/test_cuda_*.cpp) and the backend listing that reports the GPU.
cuda_tests='^(CudaBackend|CudaPipeline|CudaKernel|Backends)\.'
models=(gpt-tiny llama-tiny)

say() { printf 'gpu-check: %s\n' "$*"; }
die() {
  printf 'gpu-check: error: %s\n' "$*" >&2
  exit 1
}
usage() { sed -n '2,/^set -euo/p' "$script" | sed '$d; s/^# \{0,1\}//'; }

phases=()
phase_start=$SECONDS
phase() {
  phase_start=$SECONDS
  say "== $*"
}
end_phase() {
  phases+=("$1 $((SECONDS - phase_start)) s")
  say "   $1: $((SECONDS - phase_start)) s"
}
failures=()
gaps=()
fail() {
  failures+=("$*")
  printf 'gpu-check: FAILED: %s\n' "$*" >&2
}

mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

# ---- --prepare ---------------------------------------------------------------------------------

# The NEEDED libraries of the ELF files under PREFIX that neither PREFIX nor base_libraries holds.
missing_libraries() {
  local prefix=$1 have needed f
  have=$(find "$prefix" -name '*.so*' -printf '%f\n' | sort -u)
  needed=$(
    find "$prefix" -type f \( -name '*.so*' -o -perm -u+x \) | while read -r f; do
      local skip=0 d
      for d in $plugin_paths; do
        # shellcheck disable=SC2254 # $d is a pattern
        case $f in */$multiarch/$d) skip=1 ;; esac
      done
      [ $skip = 1 ] && continue
      readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sed "s|\$| ${f#"$prefix"/}|"
    done | sort -u
  )
  while read -r lib user; do
    [ -n "$lib" ] || continue
    case $base_libraries in *" $lib "*) continue ;; esac
    grep -qxF "$lib" <<<"$have" || echo "$lib (needed by $user)"
  done <<<"$needed"
}

# update-alternatives links of the packages' maintainer scripts (mpirun, mpicc, openblas.pc, cblas.h:
# dpkg -x runs no scripts), as "LINK TARGET" lines.
alternatives_of() {
  local deb=$1
  dpkg-deb -I "$deb" postinst 2>/dev/null | sed ':a; /\\$/ { N; s/\\\n//; ba }' |
    awk '/update-alternatives/ && /--install/ {
      for (i = 1; i <= NF; i++) {
        if ($i == "--install") { print $(i + 1), $(i + 3); i += 4 }
        else if ($i == "--slave") { print $(i + 1), $(i + 3); i += 3 }
      }
    }' | grep -v '\$' || true
}

prepare() {
  local dir=$1
  command -v apt-get >/dev/null || die "--prepare needs apt-get (a Debian 12 machine like this project's)"
  [ "$(dpkg --print-architecture)" = amd64 ] ||
    die "--prepare downloads this machine's architecture, $(dpkg --print-architecture); the GPU machine is x86-64 (amd64)"
  grep -q 'VERSION_ID="12"' /etc/os-release 2>/dev/null ||
    say "warning: not Debian 12: the packages follow this machine's release (they were chosen on Debian 12)"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  phase "download ${#packages[@]} packages into $dir"
  rm -f "$dir"/*.deb
  local sandbox=()
  [ "$(id -u)" -ne 0 ] || sandbox=(-o APT::Sandbox::User=root)
  (cd "$dir" && apt-get download -q "${sandbox[@]}" "${packages[@]}" >/dev/null) ||
    die "apt-get download failed (apt-get update first?)"
  end_phase download

  phase "check that the carried libraries need nothing else"
  prepare_tmp=$(mktemp -d)
  trap 'rm -rf "$prepare_tmp"' EXIT
  local tmp=$prepare_tmp deb
  : >"$dir/alternatives.txt"
  for deb in "$dir"/*.deb; do
    dpkg -x "$deb" "$tmp"
    alternatives_of "$deb" >>"$dir/alternatives.txt"
  done
  local missing
  missing=$(missing_libraries "$tmp")
  [ -z "$missing" ] || die "libraries needed but neither carried nor assumed present (add their packages):
$missing"
  for deb in "$dir"/*.deb; do dpkg-deb -f "$deb" Package Version | sed 's/^[^:]*: //' | paste -sd' '; done >"$dir/MANIFEST"
  say "   every NEEDED library is carried or in glibc/libstdc++/libgcc/zlib; $(wc -l <"$dir/alternatives.txt") alternatives links recorded"
  end_phase check

  local debs tree total
  debs=$(du -cb "$dir"/*.deb | tail -1 | cut -f1)
  tree=$(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2>/dev/null |
    awk '{ s += $1 } END { print s + 0 }')
  total=$((debs + tree))
  say "carried .debs: $(find "$dir" -name '*.deb' | wc -l) packages, $(mib "$debs") MiB; working tree $(mib "$tree") MiB;" \
    "together $(mib "$total") MiB of the $carry_limit_mib MiB a device call carries"
  [ "$total" -le $((carry_limit_mib * 1048576)) ] ||
    die "over the $carry_limit_mib MiB a device call carries"
  case $dir in
    "$root"/*) (cd "$root" && git check-ignore -q "${dir#"$root"/}/x.deb") ||
      say "warning: ${dir#"$root"/} is not ignored by git: it would travel as part of the tree, not as a carried path" ;;
  esac
  say "done: carry ${dir#"$root"/} (run's carry: [\"${dir#"$root"/}\"]) and run scripts/gpu-check.sh ${dir#"$root"/} there"
}

# ---- the prefix --------------------------------------------------------------------------------

unpack_deb() {
  local deb=$1 prefix=$2 member
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$deb" "$prefix"
    return
  fi
  member=$(ar t "$deb" | grep '^data\.tar') || die "$deb: no data member"
  case $member in
    *.xz) ar p "$deb" "$member" | tar -xJ -C "$prefix" ;;
    *.zst) ar p "$deb" "$member" | zstd -dc | tar -x -C "$prefix" ;;
    *.gz) ar p "$deb" "$member" | tar -xz -C "$prefix" ;;
    *) ar p "$deb" "$member" | tar -x -C "$prefix" ;;
  esac
}

# Unpacks DEBS into PREFIX (once per set of .debs): dpkg -x, the alternatives links, and .pc files
# that name PREFIX instead of /usr.
unpack_prefix() {
  local debs=$1 prefix=$2 stamp
  stamp=$(find "$debs" -maxdepth 1 -name '*.deb' -printf '%f %s\n' | sort | md5sum | cut -d' ' -f1)
  if [ -f "$prefix/.unpacked" ] && [ "$(cat "$prefix/.unpacked")" = "$stamp" ]; then
    say "   $prefix already holds these packages"
    return
  fi
  rm -rf "$prefix"
  mkdir -p "$prefix"
  local deb link target
  for deb in "$debs"/*.deb; do unpack_deb "$deb" "$prefix"; done
  if [ -f "$debs/alternatives.txt" ]; then
    while read -r link target; do
      if [ ! -e "$prefix$target" ] || [ -e "$prefix$link" ]; then continue; fi
      mkdir -p "$(dirname "$prefix$link")"
      ln -s "$prefix$target" "$prefix$link"
    done <"$debs/alternatives.txt"
  fi
  find "$prefix" -name '*.pc' -type f -exec sed -i -E "s#=/usr(/|\$)#=$prefix/usr\1#" {} +
  echo "$stamp" >"$prefix/.unpacked"
  say "   $(find "$debs" -name '*.deb' | wc -l) packages unpacked into $prefix ($(du -sh "$prefix" | cut -f1))"
}

# The environment that finds the prefix's programs, libraries and pkg-config files, and runs its
# relocated Open MPI.
prefix_env() {
  local usr=$1/usr lib=$1/usr/lib/$multiarch
  export PATH=$usr/bin:$PATH
  # Some Debian 12 packages (libexpat1) still install into /lib rather than /usr/lib.
  export LD_LIBRARY_PATH=$lib:$1/lib/$multiarch:$lib/openmpi/lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PKG_CONFIG_LIBDIR=$lib/pkgconfig:$usr/share/pkgconfig
  unset PKG_CONFIG_PATH
  export OPAL_PREFIX=$usr PMIX_PREFIX=$lib/pmix2
  export UNITY_MPIRUN=$usr/bin/mpirun
  # Transports for other fabrics (InfiniBand, UCX, OFI) need libraries that are not carried; one node
  # needs none of them: don't list each one that fails to load.
  export OMPI_MCA_mca_base_component_show_load_errors=0
  # mpirun refuses to start without ssh or rsh, even when every rank is local and none is used; a
  # bare machine has neither.
  export OMPI_MCA_plm_rsh_agent=false
}

# ---- CUDA from NVIDIA's wheels ----------------------------------------------------------------

# A python3 that imports torch (empty: none).
python_with_torch() {
  local p
  for p in ${GPU_CHECK_PYTHON:-} python3 /usr/bin/python3; do
    command -v "$p" >/dev/null && "$p" -c 'import torch' 2>/dev/null && { command -v "$p"; return; }
  done
  return 0
}

find_nvcc() {
  local p d
  for p in "$(command -v nvcc || true)" "${CUDA_HOME:-/nonexistent}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
    [ -n "$p" ] && [ -x "$p" ] && { echo "$p"; return; }
  done
  for d in $("$python" "$helper" wheel-dirs 2>/dev/null); do
    [ -x "$d/bin/nvcc" ] && { echo "$d/bin/nvcc"; return; }
  done
  return 1
}

# Why this machine cannot run the check (empty: it can).
gpu_missing() {
  local out
  command -v nvidia-smi >/dev/null || { echo "no NVIDIA driver (nvidia-smi is not on PATH), so no GPU"; return; }
  out=$(nvidia-smi -L 2>&1) || { echo "nvidia-smi failed: $(head -1 <<<"$out")"; return; }
  grep -q '^GPU ' <<<"$out" || { echo "nvidia-smi lists no GPU"; return; }
  find_nvcc >/dev/null ||
    echo "no nvcc (not on PATH, in \$CUDA_HOME, /usr/local/cuda or Python's nvidia wheels): the CUDA backend cannot be compiled"
}

# A folder with include/ and lib/ holding the cuBLAS, cuDNN and NCCL files that the CUDA toolkit
# next to nvcc lacks, linked from the wheels (which also lack the unversioned libX.so that the
# linker looks for). The toolkit's own copies come first.
cuda_shim() {
  local shim=$1 nvcc=$2 tk d f name
  tk=$(cd "$(dirname "$nvcc")/.." && pwd)
  rm -rf "$shim"
  mkdir -p "$shim/include" "$shim/lib"
  in_toolkit() {
    local sub
    for sub in include lib64 lib targets/x86_64-linux/include targets/x86_64-linux/lib; do
      [ -e "$tk/$sub/$1" ] && return 0
    done
    return 1
  }
  wheel_lib_dirs=()
  for d in $("$python" "$helper" wheel-dirs); do
    [ -d "$d/lib" ] && wheel_lib_dirs+=("$d/lib")
    for f in "$d"/include/cublas* "$d"/include/cudnn* "$d"/include/nccl*; do
      [ -e "$f" ] || continue
      name=$(basename "$f")
      in_toolkit "$name" || [ -e "$shim/include/$name" ] || ln -s "$f" "$shim/include/$name"
    done
    for f in "$d"/lib/libcublas* "$d"/lib/libcudnn* "$d"/lib/libnccl*; do
      [ -e "$f" ] || continue
      name=$(basename "$f")
      in_toolkit "${name%%.so*}.so" && continue
      [ -e "$shim/lib/$name" ] || ln -s "$f" "$shim/lib/$name"
      [ -e "$shim/lib/${name%%.so*}.so" ] || ln -s "$f" "$shim/lib/${name%%.so*}.so"
    done
  done
  say "   CUDA toolkit: $tk (nvcc $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'));" \
    "from the wheels: $(find "$shim" -type l | wc -l) files${wheel_lib_dirs[*]:+ (${wheel_lib_dirs[*]})}"
}

# ---- the steps -----------------------------------------------------------------------------------

configure_and_build() {
  local build=$1 prefix=$2 cuda=$3
  shift 3
  phase "configure ($build)"
  local args=(-S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DUNITY_GUI=OFF -DUNITY_TESTS=ON -DUNITY_MIMALLOC=OFF -DUNITY_CUDA="$cuda"
    -DCCACHE_PROGRAM=OFF -DPKG_CONFIG_EXECUTABLE="$prefix/usr/bin/pkgconf"
    -DMPI_C_COMPILER="$prefix/usr/bin/mpicc" "$@")
  # shellcheck disable=SC2206 # GPU_CHECK_CMAKE_ARGS is a list of words by design
  args+=(${GPU_CHECK_CMAKE_ARGS:-})
  if ! cmake "${args[@]}" >"$work/configure.log" 2>&1; then
    tail -40 "$work/configure.log" >&2
    keep_log "$work/configure.log"
    die "configure failed (the log: $work/configure.log)"
  fi
  grep -E '^-- (Unity:|CUDA backend)' "$work/configure.log" | sed 's/^/   /' || true
  grep -E '^(CUDNN_LIBRARY|NCCL_LIBRARY|CUDA_cublas_LIBRARY|CUDA_CUDART|pkgcfg_lib_OPENBLAS_openblas|pkgcfg_lib_GVC_gvc|MPI_mpi_LIBRARY|fmt_DIR|SQLite3_LIBRARY|Z3_LIBRARY)[:=]' \
    "$build/CMakeCache.txt" | sed 's/^/   found /' || true
  end_phase configure

  phase "build unity, unity-worker and unity_executor_tests (-j $jobs)"
  local nice=()
  [ "$mode" != rehearse ] || nice=(nice -n 19)
  if ! "${nice[@]}" cmake --build "$build" -j "$jobs" --target unity unity-worker unity_executor_tests \
    >"$work/build.log" 2>&1; then
    grep -E 'error|Error|FAILED' "$work/build.log" | head -30 >&2 || true
    tail -20 "$work/build.log" >&2
    keep_log "$work/build.log"
    die "build failed (the log: $work/build.log)"
  fi
  end_phase build
}

# Every shared library the programs load must resolve, and those the prefix carries from the prefix
# (not from a system copy that the GPU machine would not have).
check_loaded_libraries() {
  local build=$1 prefix=$2 carried bin lib path bad=""
  carried=$(find "$prefix" -name '*.so*' -printf '%f\n' | sort -u)
  for bin in "$build/bin/unity" "$build/bin/unity-worker" "$build/tests/executor/unity_executor_tests"; do
    while read -r lib path; do
      if [ "$path" = "not found" ]; then
        bad+="  $(basename "$bin"): $lib not found"$'\n'
      elif grep -qxF "$lib" <<<"$carried" && [ "${path#"$prefix"/}" = "$path" ]; then
        bad+="  $(basename "$bin"): $lib from $path, not from the prefix"$'\n'
      fi
    done < <(ldd "$bin" | awk '$2 == "=>" { print $1, ($3 == "not" ? "not found" : $3) }')
  done
  if [ -n "$bad" ]; then
    printf '%s' "$bad" >&2
    fail "the programs' shared libraries (see above)"
  else
    say "   every shared library of unity, unity-worker and the tests resolves, the carried ones from the prefix"
  fi
}

run_tests() {
  local build=$1
  phase "the CUDA tests (ctest -R '$cuda_tests')"
  local rc=0
  ctest --test-dir "$build" -R "$cuda_tests" --output-on-failure --timeout 300 >"$work/ctest.log" 2>&1 || rc=$?
  grep -E 'Test +#|tests passed|Skipped|SKIPPED' "$work/ctest.log" | grep -v '^\[' | sed 's/^/   /' || true
  keep_log "$work/ctest.log"
  [ $rc -eq 0 ] || fail "CUDA tests (the log: $work/ctest.log)"
  # On a GPU machine a CUDA test that skips did not check anything (one skips where a GPU exists).
  if [ "$mode" = gpu ] && grep -v ThrowsInsteadOfCrashingWithoutAGpu "$work/ctest.log" | grep -q '\*\*\*Skipped'; then
    fail "CUDA tests skipped on a GPU machine (the log: $work/ctest.log)"
  fi
  end_phase tests
}

train_models() {
  local build=$1 backend=$2 gpu_name=$3
  local bin=$build/bin results=$work/results iterations=${GPU_CHECK_ITERATIONS:-20}
  local run_args=(--backend "$backend" --ranks 1 --timeout 120)
  # The CPU backend runs one rank in-process; the rehearsal starts it through mpirun, as CUDA runs.
  [ "$backend" = cuda ] || run_args+=(--mpirun-always)
  mkdir -p "$results"
  "$bin/unity" models >"$results/models.txt"
  local device=cuda
  [ "$backend" = cuda ] || device=cpu
  local m
  for m in "${models[@]}"; do
    phase "train $m on one $backend rank (bf16 plan for $machine, --check)"
    local r=$results/$m not_run=""
    rm -f "$r".*.json "$r.json"
    if ! "$bin/unity" optimize "$m" --machine "$machine" --gpus 1 --dtype bfloat16 --out "$r.plan.json" --json \
      >"$r.optimize.json" 2>"$r.log"; then
      cat "$r.log" >&2
      fail "$m: unity optimize"
      continue
    fi
    if ! "$bin/unity" run "$r.plan.json" "${run_args[@]}" --iterations "$iterations" --warmup 5 --check --json \
      >"$r.run.json" 2>>"$r.log"; then
      rm -f "$r.run.json"
      tail -20 "$r.log" >&2
      # An operator the executor cannot run (on any backend) is a gap to report, not a GPU failure.
      not_run=$(grep -o "[^:]*is not supported by the executor.*" "$r.log" | head -1 | sed "s/^ *//" || true)
      if [ -n "$not_run" ]; then
        gaps+=("$m: not trained: $not_run (the same on the CPU backend)")
      else
        fail "$m: unity run --check (the log: $r.log)"
      fi
    else
      # Per-operator times come from a run of their own: --profile synchronises after every operator.
      "$bin/unity" run "$r.plan.json" "${run_args[@]}" --iterations 5 --warmup 2 --profile --json \
        >"$r.profile.json" 2>>"$r.log" || {
        tail -20 "$r.log" >&2
        fail "$m: unity run --profile (the log: $r.log)"
      }
      # --check: the run against the one-rank CPU reference, both in float32; the tests' tolerance
      # (GPU kernels sum in another order).
      "$python" -c 'import json, sys; d = json.load(open(sys.argv[1]))["max_rel_diff"]; sys.exit(0 if d < 1e-3 else 1)' \
        "$r.run.json" || fail "$m: --check differs from the one-rank reference by more than 1e-3 (relative)"
    fi
    local optimizer
    optimizer=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["optimizer"])' "$r.optimize.json")
    if [ -n "$torch_python" ]; then
      "$torch_python" "$helper" torch --model "$m" --models "$results/models.txt" --device "$device" \
        --optimizer "$optimizer" -o "$r.torch.json" 2>>"$r.log" || say "   no PyTorch comparison (the log: $r.log)"
    fi
    "$python" "$helper" report --run "$r.run.json" --profile "$r.profile.json" --torch "$r.torch.json" \
      --optimize "$r.optimize.json" --gpu "$gpu_name" --not-run "$not_run" -o "$r.json" | sed 's/^/   /'
    keep_log "$r.json"
    end_phase "$m"
  done
  say "== summary (ms per iteration; the plan's prediction is for $machine in bf16)"
  local files=()
  for m in "${models[@]}"; do files+=("$results/$m.json"); done
  "$python" "$helper" summary "${files[@]}" | tee "$results/summary.txt"
  keep_log "$results/summary.txt"
  # The host's launch rate, which an MoE layer of many small kernels can be bound by: the figure
  # the cost model lacks for the layouts it predicts too fast (docs/large-models.md).
  if [ "$backend" = cuda ] && [ -n "$torch_python" ]; then
    phase "host launches (PyTorch eager)"
    "$torch_python" "$helper" host -o "$results/host.json" 2>>"$results/host.log" | sed 's/^/   /' ||
      say "   no host measurement (the log: $results/host.log)"
    keep_log "$results/host.json"
    end_phase "host launches"
  fi
}

# Copies a result or log into GPU_CHECK_OUT (the device's $OUT, say), if set.
keep_log() {
  if [ -n "${GPU_CHECK_OUT:-}" ] && [ -f "$1" ]; then
    mkdir -p "$GPU_CHECK_OUT"
    cp "$1" "$GPU_CHECK_OUT/"
  fi
}

finish() {
  local list
  list=$(printf '%s, ' "${phases[@]}")
  say "phases: ${list%, }; total $SECONDS s"
  if [ ${#gaps[@]} -gt 0 ]; then
    printf 'gpu-check: not checked (gaps of the executor, not of the GPU path):\n'
    printf '  - %s\n' "${gaps[@]}"
  fi
  if [ ${#failures[@]} -gt 0 ]; then
    printf 'gpu-check: %d failure(s):\n' ${#failures[@]} >&2
    printf '  - %s\n' "${failures[@]}" >&2
    exit 1
  fi
  say "passed"
}

# ---- --rehearse: hide the system's copies of the carried packages ---------------------------------

# The files of the carried packages installed here (plus ssh: a bare machine has none), less the
# shared libraries that the toolchain and PyTorch load themselves: those go to $work/visible.txt.
hide_list() {
  local keep f
  keep=$(
    {
      for f in cmake ctest ninja bash g++ gcc ld as mount dpkg-deb "$python" ${torch_python:+"$torch_python"}; do
        command -v "$f" 2>/dev/null || true
      done
      g++ -print-prog-name=cc1plus
      g++ -print-prog-name=collect2
      g++ -print-prog-name=lto-wrapper
      [ -z "$torch_python" ] || "$torch_python" -c 'import torch; print(torch._C.__file__)' 2>/dev/null
    } | while read -r f; do
      [ -e "$f" ] || continue
      readlink -f "$f"
      ldd "$f" 2>/dev/null | awk '/=> \// { print $3 }' | xargs -r readlink -f
    done | sort -u
  )
  {
    dpkg-query -L "${packages[@]}" libblas-dev libmimalloc-dev 2>/dev/null | while read -r f; do
      [ -f "$f" ] && readlink -f "$f"
    done
    for f in ssh rsh; do
      if command -v "$f" >/dev/null; then readlink -f "$(command -v "$f")"; fi
    done
  } | sort -u >"$work/system-files.txt"
  grep -xF -f <(echo "$keep") "$work/system-files.txt" >"$work/visible.txt" || true
  grep -vxF -f <(echo "$keep") "$work/system-files.txt" || true
}

hide_system_packages() {
  if [ "${GPU_CHECK_NO_HIDE:-0}" = 1 ]; then
    say "   GPU_CHECK_NO_HIDE=1: the system's packages stay visible (the prefix comes first)"
    return 1
  fi
  if [ "$(id -u)" -ne 0 ] || ! unshare -m --propagation private true 2>/dev/null; then
    say "   warning: no private mount namespace here (needs root): the system's packages stay visible," \
      "so this shows the prefix comes first, not that it is enough"
    return 1
  fi
  return 0
}

# ---- main ----------------------------------------------------------------------------------------

mode=gpu
debs=$root/.gpu-debs
case "${1:-}" in
  --prepare) mode=prepare ;;
  --rehearse) mode=rehearse ;;
  -h | --help)
    usage
    exit 0
    ;;
  -*) die "unknown option '$1' (--prepare [DIR], --rehearse [DIR], [DIR], --help)" ;;
  *) [ -z "${1:-}" ] || debs=$1 ;;
esac
if [ "$mode" != gpu ] && [ -n "${2:-}" ]; then debs=$2; fi
[ "$mode" != gpu ] || [ $# -le 1 ] || die "too many arguments (see --help)"
case $debs in /*) ;; *) debs=$PWD/$debs ;; esac

if [ "$mode" = prepare ]; then
  prepare "$debs"
  exit 0
fi

python=$(command -v python3 || true)
[ -n "$python" ] || die "no python3 (the check's reports are written in Python)"

if [ "$mode" = gpu ]; then
  why=$(gpu_missing)
  if [ -n "$why" ]; then
    say "skipped: ${why%.}."
    say "Nothing was built. On a lent GPU machine: scripts/gpu-check.sh --prepare here, carry .gpu-debs," \
      "run scripts/gpu-check.sh there (README: 'The GPU check'); scripts/gpu-check.sh --rehearse rehearses the build here."
    exit 0
  fi
fi
ls "$debs"/*.deb >/dev/null 2>&1 ||
  die "no .deb files in $debs: run scripts/gpu-check.sh --prepare ${debs#"$root"/} on a Debian 12 machine with apt, and carry that folder"
torch_python=$(python_with_torch)
jobs=${GPU_CHECK_JOBS:-$(nproc)}

cuda=ON
backend=cuda
arch=""
if [ "$mode" = rehearse ]; then
  work=${GPU_CHECK_WORK:-/tmp/unity-gpu-check-rehearsal}
  mkdir -p "$work"
  if [ -z "${GPU_CHECK_HIDDEN:-}" ] && hide_system_packages; then
    phase "hide the system's copies of the carried packages (a private mount namespace)"
    hide_list >"$work/hidden.txt"
    say "   $(wc -l <"$work/hidden.txt") files hidden (bound to /dev/null: a stray use fails loudly); the list: $work/hidden.txt"
    [ ! -s "$work/visible.txt" ] ||
      say "   left visible, since cmake, the compiler or PyTorch load them: $(xargs -n1 basename <"$work/visible.txt" | paste -sd' ')"
    export GPU_CHECK_HIDDEN=$work/hidden.txt GPU_CHECK_WORK=$work
    # shellcheck disable=SC2016 # expanded by the inner bash
    exec unshare -m --propagation private bash -c '
      while read -r f; do mount --bind /dev/null "$f" || exit 1; done <"$GPU_CHECK_HIDDEN"
      exec "$@"' _ bash "$script" --rehearse "$debs"
  fi
  # GPU_CHECK_REHEARSE_CUDA=1 also compiles the CUDA backend where nvcc and the libraries exist
  # without a GPU (then the CUDA tests that need a GPU skip, and the runs still use the CPU).
  [ "${GPU_CHECK_REHEARSE_CUDA:-0}" = 1 ] || cuda=OFF
  backend=cpu
  gpu_name="CPU rehearsal"
  machine=${GPU_CHECK_MACHINE:-dgx-h100}
  say "rehearsal: the GPU machine's build (CUDA $cuda), tests and runs on the CPU backend, $jobs build job(s)"
else
  work=${GPU_CHECK_WORK:-$root/build-gpu}
  mkdir -p "$work"
  gpu_line=$(nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader | head -1)
  gpu_name=$(cut -d, -f1 <<<"$gpu_line" | sed 's/ *$//')
  arch=$(cut -d, -f2 <<<"$gpu_line" | tr -d ' .')
  case $gpu_name in
    *GB200*) default_machine=gb200-nvl72 ;;
    *B200*) default_machine=dgx-b200 ;;
    *H200*) default_machine=dgx-h200 ;;
    *H100*) default_machine=dgx-h100 ;;
    *A100*) default_machine=dgx-a100 ;;
    *) default_machine=dgx-h100 ;;
  esac
  machine=${GPU_CHECK_MACHINE:-$default_machine}
  say "GPU: $gpu_line; plans for $machine; $jobs build jobs; work folder $work"
fi

what="unpack the carried packages"
[ "$cuda" = OFF ] || what+=" and find CUDA"
phase "$what"
unpack_prefix "$debs" "$work/prefix"
prefix_env "$work/prefix"
cmake_args=(-DCMAKE_PREFIX_PATH="$work/prefix/usr")
if [ "$cuda" = ON ]; then
  nvcc=$(find_nvcc) || die "no nvcc (not on PATH, in \$CUDA_HOME, /usr/local/cuda or Python's nvidia wheels)"
  cuda_shim "$work/cuda-wheels" "$nvcc"
  export LD_LIBRARY_PATH=$work/cuda-wheels/lib${wheel_lib_dirs[*]:+:$(IFS=:; echo "${wheel_lib_dirs[*]}")}:$LD_LIBRARY_PATH
  # This GPU's architecture only (the default builds two): half the nvcc time.
  cmake_args=(-DCMAKE_PREFIX_PATH="$work/prefix/usr;$work/cuda-wheels" -DCMAKE_CUDA_COMPILER="$nvcc"
    -DCMAKE_CUDA_ARCHITECTURES="${arch:-90}")
fi
end_phase unpack
configure_and_build "$work/build" "$work/prefix" "$cuda" "${cmake_args[@]}"
check_loaded_libraries "$work/build" "$work/prefix"
run_tests "$work/build"
train_models "$work/build" "$backend" "$gpu_name"
finish
