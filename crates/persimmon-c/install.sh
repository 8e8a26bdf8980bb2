#!/usr/bin/env bash
# Builds the C library in release mode and installs it under PREFIX:
#   PREFIX/lib/libpersimmon.so, PREFIX/lib/libpersimmon.a,
#   PREFIX/include/persimmon.h, PREFIX/lib/pkgconfig/persimmon.pc
# Usage: crates/persimmon-c/install.sh PREFIX   (e.g. /usr/local, or $HOME/.local)
# Then: cc app.c $(pkg-config --cflags --libs persimmon)
#   (with PKG_CONFIG_PATH=PREFIX/lib/pkgconfig when PREFIX is not a system one;
#   link statically with pkg-config --static and PREFIX/lib/libpersimmon.a).
set -euo pipefail

mkdir -p "${1:?usage: install.sh PREFIX}"
prefix=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
manifest="$here/Cargo.toml"

cargo build --release -p persimmon-c --manifest-path "$manifest"
target=$(cargo metadata --format-version 1 --no-deps --manifest-path "$manifest" |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
version=$(cargo pkgid -p persimmon-c --manifest-path "$manifest" | sed 's/.*[#@]//')

mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
install -m 0755 "$target/release/libpersimmon.so" "$prefix/lib/"
install -m 0644 "$target/release/libpersimmon.a" "$prefix/lib/"
install -m 0644 "$here/include/persimmon.h" "$prefix/include/"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" "$here/persimmon.pc.in" \
  > "$prefix/lib/pkgconfig/persimmon.pc"
echo "installed persimmon $version under $prefix"
