#!/usr/bin/env bash
# Installs every build and run dependency of hetps.
#   scripts/install-deps.sh [--torch system|pip]
# Debian 12: the packages below from Debian (compilers, CMake, ZeroMQ, FlatBuffers, Boost, Catch2,
# yaml-cpp, the Fashion-MNIST data, LibTorch 1.13; clang with libFuzzer and the sanitizers'
# runtime for scripts/fuzz.sh, clang-format and clang-tidy for scripts/lint.sh; iproute2 and
# python3-yaml for scripts/sim_cluster.sh; openssh-server and slurm-wlm for the tests of
# scripts/launch_hosts.sh and deploy/slurm, which start their own sshd and Slurm; prometheus and
# chromium for the tests of the status endpoint; python3-matplotlib for scripts/report.sh) and
# OpenBLAS's OpenMP build as the system BLAS (Debian's LibTorch is 7-27x slower on the reference
# BLAS); from PyPI for Debian's python3, safetensors, kubernetes-validate and tensorboard (for
# the tests of the export, the manifests and the report). With --torch pip, also PyPI's torch
# (the CUDA build of LibTorch, about 3 GB) in a virtual environment at .venv in the repository,
# for scripts/build.sh --torch pip; configuring against it needs the CUDA toolkit's nvcc
# (/usr/local/cuda), though no GPU.
# macOS (Homebrew): the same libraries from Homebrew and PyPI's torch (the MPS build) in .venv;
# --torch pip is the only choice there.
# Idempotent: prints one line per part and installs nothing that is already present.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
os=$(uname -s)
torch=system
[[ $os == Darwin ]] && torch=pip
while (($#)); do
  case $1 in
    --torch) [[ $# -ge 2 ]] || { echo "install-deps: --torch needs a value" >&2; exit 2; }; torch=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install-deps: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $torch == system || $torch == pip ]] || {
  echo "install-deps: --torch '$torch' is not a LibTorch provider; use system or pip" >&2; exit 2; }

# PyPI's torch, pinned so that every machine builds against the same LibTorch; raise it here.
torch_requirement=${HETPS_TORCH_REQUIREMENT:-torch==2.15.0}
venv="$root/.venv"

# torch from PyPI into $venv, made with python interpreter $1.
install_pip_torch() {
  local python=$1
  if [[ -x $venv/bin/python ]] &&
     "$venv/bin/python" -c "import sys, torch; sys.exit(0 if 'torch==' + torch.__version__.split('+')[0] == '$torch_requirement' else 1)" 2>/dev/null; then
    echo "install-deps: $torch_requirement present in $venv"
    return
  fi
  [[ -x $venv/bin/python ]] || "$python" -m venv "$venv"
  echo "install-deps: installing $torch_requirement from PyPI into $venv (about 3 GB on Linux)"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$torch_requirement"
  "$venv/bin/python" -c "import torch; print('install-deps: torch', torch.__version__, 'in', torch.__path__[0])"
}

if [[ $os == Darwin ]]; then
  [[ $torch == pip ]] || { echo "install-deps: macOS has no system LibTorch; use --torch pip" >&2; exit 2; }
  command -v brew >/dev/null || { echo "install-deps: Homebrew (brew) is needed on macOS" >&2; exit 1; }
  xcode-select -p >/dev/null 2>&1 || {
    echo "install-deps: the Xcode command line tools are needed: run xcode-select --install" >&2; exit 1; }
  # Homebrew's catch2 is Catch2 3, which the tests (written for Catch2 2) do not build with; the
  # build leaves the tests out when it finds no Catch2 2 (scripts/build.sh says so).
  formulae=(cmake pkg-config zeromq cppzmq libsodium flatbuffers boost yaml-cpp nlohmann-json cli11 python@3.12)
  missing=()
  for f in "${formulae[@]}"; do brew list --versions "$f" >/dev/null 2>&1 || missing+=("$f"); done
  if ((${#missing[@]})); then
    echo "install-deps: brew install ${missing[*]}"
    brew install "${missing[@]}"
  else
    echo "install-deps: Homebrew packages present"
  fi
  install_pip_torch "$(brew --prefix python@3.12)/bin/python3.12"
  echo "install-deps: Fashion-MNIST is not packaged for macOS: copy the four .gz files (e.g. from a" \
       "Debian box's /usr/share/datasets/fashion-mnist) into a directory and pass it as --data-dir"
  exit 0
fi

packages=(
  build-essential cmake pkg-config ccache
  clang libclang-rt-14-dev clang-format clang-tidy
  libtorch-dev
  libzmq3-dev cppzmq-dev libsodium-dev
  libflatbuffers-dev flatbuffers-compiler
  libboost-dev
  catch2
  libyaml-cpp-dev
  nlohmann-json3-dev
  libcli11-dev
  zlib1g-dev
  libopenblas0-openmp
  dataset-fashion-mnist
  python3
  python3-venv
  python3-matplotlib
  python3-pip
  python3-torch
  python3-numpy
  python3-yaml
  iproute2
  openssh-server
  slurm-wlm
  prometheus
  chromium
)

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  sudo_cmd=(sudo)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
  "${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# OpenBLAS (OpenMP build) must be the BLAS that LibTorch resolves through libblas.so.3.
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
for lib in libblas.so.3 liblapack.so.3; do
  alt="$lib-$arch"
  current=$(update-alternatives --query "$alt" 2>/dev/null | awk '/^Value:/ {print $2}')
  if [[ $current != *openblas* ]]; then
    echo "install-deps: selecting OpenBLAS for $lib"
    "${sudo_cmd[@]}" update-alternatives --auto "$alt" >/dev/null
    current=$(update-alternatives --query "$alt" 2>/dev/null | awk '/^Value:/ {print $2}')
    [[ $current == *openblas* ]] || {
      echo "install-deps: $lib still points at '$current', not OpenBLAS; run" \
           "'update-alternatives --config $alt' and pick the openblas-openmp entry" >&2
      exit 1
    }
  fi
done

data=/usr/share/datasets/fashion-mnist
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  [[ -s $data/$f ]] || { echo "install-deps: $data/$f is missing after installing dataset-fashion-mnist" >&2; exit 1; }
done

((${#missing[@]})) || echo "install-deps: Debian packages present"

# The export test loads the trained model the way a Python user does, with PyPI's safetensors,
# into Debian's python3-torch. Debian's Python is externally managed (PEP 668), and safetensors
# has no Debian package: pip installs it into /usr/local, beside Debian's own packages.
if ! /usr/bin/python3 -c 'import safetensors' 2>/dev/null; then
  echo "install-deps: installing safetensors from PyPI for /usr/bin/python3"
  "${sudo_cmd[@]}" /usr/bin/python3 -m pip install --quiet --root-user-action=ignore \
    --break-system-packages 'safetensors>=0.4,<1'
fi

# The Kubernetes manifests' test validates them against the API schemas that PyPI's
# kubernetes-validate bundles (no cluster, no network), with Debian's python3 as above.
if ! /usr/bin/python3 -c 'import kubernetes_validate' 2>/dev/null; then
  echo "install-deps: installing kubernetes-validate from PyPI for /usr/bin/python3"
  "${sudo_cmd[@]}" /usr/bin/python3 -m pip install --quiet --root-user-action=ignore \
    --break-system-packages 'kubernetes-validate>=1.28,<2'
fi

# scripts/report.sh --tensorboard writes event files with PyPI's tensorboard (its test reads
# them back with TensorBoard's own reader), with Debian's python3 as above.
if ! /usr/bin/python3 -c 'import tensorboard' 2>/dev/null; then
  echo "install-deps: installing tensorboard from PyPI for /usr/bin/python3"
  "${sudo_cmd[@]}" /usr/bin/python3 -m pip install --quiet --root-user-action=ignore \
    --break-system-packages 'tensorboard>=2.14,<3'
fi

if [[ $torch == pip ]]; then
  install_pip_torch /usr/bin/python3
  # find_package(Torch) of the CUDA build enables CUDA and so needs nvcc (not a GPU).
  if ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]] &&
     "$venv/bin/python" -c "import sys, torch; sys.exit(0 if torch.version.cuda else 1)"; then
    echo "install-deps: this torch is a CUDA build, and configuring against it needs the CUDA" \
         "toolkit's nvcc (expected at /usr/local/cuda/bin/nvcc, or on PATH); install NVIDIA's CUDA" \
         "toolkit of the same major version as torch.version.cuda" >&2
    exit 1
  fi
fi
