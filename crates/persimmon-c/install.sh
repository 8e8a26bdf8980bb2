#!/usr/bin/env bash
# Builds the C library in release mode and installs it under PREFIX:
#   PREFIX/lib/libpersimmon.so, PREFIX/lib/libpersimmon.a,
#   PREFIX/include/persimmon.h, PREFIX/lib/pkgconfig/persimmon.pc
# Usage: crates/persimmon-c/install.sh PREFIX   (e.g. /usr/local, or $HOME/.local)
#
# A system prefix (/usr, /usr/local, /opt/...) is registered with the
# dynamic loader when run as root: ldconfig, plus an entry in
# /etc/ld.so.conf.d/persimmon.conf when the loader does not search
# PREFIX/lib already. Then:
#   cc app.c $(pkg-config --cflags --libs persimmon) -o app
# Any other prefix is not searched by the loader: link with an rpath,
#   PKG_CONFIG_PATH=PREFIX/lib/pkgconfig; cc app.c $(pkg-config --cflags --libs persimmon) \
#     -Wl,-rpath,"$(pkg-config --variable=libdir persimmon)" -o app
# (link statically with pkg-config --static and PREFIX/lib/libpersimmon.a).
# PERSIMMON_LDCONFIG=yes registers any prefix, =no none (default: auto).
#
# Under sudo (root with SUDO_USER set) nothing is built: cargo is usually
# the user's, and a build as root would leave root's files in the user's
# target directory. Build first as yourself, then install:
#   cargo build --release -p persimmon-c && sudo crates/persimmon-c/install.sh /usr/local
set -euo pipefail

mkdir -p "${1:?usage: install.sh PREFIX}"
prefix=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
manifest="$here/Cargo.toml"
libdir="$prefix/lib"
# Whether to register PREFIX/lib with the dynamic loader (below).
mode=${PERSIMMON_LDCONFIG:-auto}
case $mode in
  auto) case $prefix in /usr | /usr/local | /opt/*) register=yes ;; *) register=no ;; esac ;;
  yes) register=yes ;;
  no) register=no ;;
  *) echo "install.sh: PERSIMMON_LDCONFIG is auto, yes or no" >&2; exit 2 ;;
esac

if [[ $EUID -ne 0 || -z ${SUDO_USER:-} ]]; then
  cargo build --release -p persimmon-c --manifest-path "$manifest"
fi
if command -v cargo >/dev/null; then
  target=$(cargo metadata --format-version 1 --no-deps --manifest-path "$manifest" |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
  version=$(cargo pkgid -p persimmon-c --manifest-path "$manifest" | sed 's/.*[#@]//')
else
  workspace=$(cd "$here/../.." && pwd)
  target=${CARGO_TARGET_DIR:-$workspace/target}
  version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' \
    "$workspace/Cargo.toml")
fi
for built in libpersimmon.so libpersimmon.a; do
  if [[ ! -f $target/release/$built ]]; then
    echo "install.sh: $target/release/$built is missing;" \
      "build it first, as yourself: cargo build --release -p persimmon-c" >&2
    exit 1
  fi
done

mkdir -p "$libdir/pkgconfig" "$prefix/include"
install -m 0755 "$target/release/libpersimmon.so" "$libdir/"
install -m 0644 "$target/release/libpersimmon.a" "$libdir/"
install -m 0644 "$here/include/persimmon.h" "$prefix/include/"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" "$here/persimmon.pc.in" \
  > "$libdir/pkgconfig/persimmon.pc"
echo "installed persimmon $version under $prefix"

# The dynamic loader: a system prefix is registered, any other is left to
# the program's rpath.
if [[ $register == no ]]; then
  if [[ $mode == no ]]; then
    echo "not registered with the dynamic loader (PERSIMMON_LDCONFIG=no):" \
      "run ldconfig as root, or link programs with -Wl,-rpath,$libdir"
  else
    echo "the dynamic loader does not search $libdir: link programs with" \
      "-Wl,-rpath,$libdir (or run them with LD_LIBRARY_PATH=$libdir)"
  fi
  exit 0
fi
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
if [[ $EUID -ne 0 ]]; then
  echo "install.sh: installed, but registering $libdir with the dynamic loader" \
    "needs root: run this again as root (or sudo ldconfig), or link programs" \
    "with -Wl,-rpath,$libdir" >&2
  exit 1
fi
# Whether the loader's cache (what ldconfig found in its search path)
# names the installed library.
found() {
  "$ldconfig" -p | awk -v lib="$libdir/libpersimmon.so" '$NF == lib { f = 1 } END { exit !f }'
}
"$ldconfig"
if ! found; then
  conf=/etc/ld.so.conf.d/persimmon.conf
  echo "$libdir" > "$conf"
  "$ldconfig"
  echo "added $libdir to the dynamic loader's search path ($conf)"
fi
if ! found; then
  echo "install.sh: ldconfig ran, but the loader's cache does not name $libdir/libpersimmon.so" >&2
  exit 1
fi
echo "registered $libdir/libpersimmon.so with the dynamic loader (ldconfig)"
