#!/usr/bin/env bash
# Installs every build and run dependency of hetps from Debian 12 packages, and makes OpenBLAS's
# OpenMP build the system BLAS (Debian's LibTorch is 7-27x slower on the reference BLAS).
# Idempotent: prints one line and does nothing when everything is already present.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
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
  python3-matplotlib
  python3-pip
  python3-torch
  python3-numpy
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

# The export test loads the trained model the way a Python user does, with PyPI's safetensors,
# into Debian's python3-torch. Debian's Python is externally managed (PEP 668), and safetensors
# has no Debian package: pip installs it into /usr/local, beside Debian's own packages.
python_missing=0
if ! /usr/bin/python3 -c 'import safetensors' 2>/dev/null; then
  python_missing=1
  echo "install-deps: installing safetensors from PyPI for /usr/bin/python3"
  "${sudo_cmd[@]}" /usr/bin/python3 -m pip install --quiet --root-user-action=ignore \
    --break-system-packages 'safetensors>=0.4,<1'
fi

((${#missing[@]} || python_missing)) || echo "install-deps: all dependencies present"
