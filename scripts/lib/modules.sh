# shellcheck shell=bash
# Sourced by scripts/gpu/kit.sh and scripts/package/package.sh: copying
# llama.cpp's libraries and backend modules out of a build, by the list
# (dyno-backends.txt) that names each module and the llama.cpp build it
# belongs to. Dyno refuses a module its folder's list does not name for its
# own build, so a folder put together by hand must keep the list whole.

# copy_build_modules REL DEST: the release build's shared libraries (by
# soname), every module its list names, and the list.
copy_build_modules() {
  local rel=$1 dest=$2 m
  cp "$rel"/lib*.so.[0-9]* "$dest/"
  for m in $(grep -v '^#' "$rel/dyno-backends.txt" | awk '{print $2}'); do cp "$rel/$m" "$dest/"; done
  cp "$rel/dyno-backends.txt" "$dest/"
}

# add_modules FROM DEST: the modules of a folder built apart (CUDA, Vulkan),
# with their lines appended to DEST's list, only when FROM's list names the
# build DEST's list names. Returns 1, saying why on stderr, when it adds
# nothing.
add_modules() {
  local from=$1 dest=$2 m theirs ours
  if [ ! -f "$from/dyno-backends.txt" ]; then
    echo "modules: $from has no dyno-backends.txt; nothing added" >&2
    return 1
  fi
  theirs=$(grep '^# build:' "$from/dyno-backends.txt")
  ours=$(grep '^# build:' "$dest/dyno-backends.txt")
  if [ "$theirs" != "$ours" ]; then
    echo "modules: $from is of another llama.cpp build (${theirs#\# build: }, not ${ours#\# build: }); not added" >&2
    return 1
  fi
  for m in $(grep -v '^#' "$from/dyno-backends.txt" | awk '{print $2}'); do
    cp "$from/$m" "$dest/"
    echo "modules: $m from $from" >&2
  done
  grep -v '^#' "$from/dyno-backends.txt" >>"$dest/dyno-backends.txt"
}
