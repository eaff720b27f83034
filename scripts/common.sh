# SPDX-License-Identifier: GPL-2.0
# Shared definitions for ipt's scripts. Source it; do not run it.

# Everything expensive that is derived from Debian packages (the extracted
# kernel source, the debug kernel build) lives outside the repository, here.
IPT_CACHE=${IPT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ipt}

# The kernel source tree Debian ships as linux-source-6.1.
IPT_SRC_TARBALL=${IPT_SRC_TARBALL:-/usr/src/linux-source-6.1.tar.xz}

ipt_die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

ipt_note() {
	echo "${0##*/}: $*" >&2
}

# The newest installed Debian kernel flavour (e.g. 6.1.0-56-amd64) that has
# both an image and headers. Prints nothing if there is none.
ipt_stock_kver() {
	local v best=
	for v in /usr/src/linux-headers-*-amd64; do
		[ -d "$v" ] || continue
		v=${v#/usr/src/linux-headers-}
		[ -f "/boot/vmlinuz-$v" ] || continue
		best=$(printf '%s\n%s\n' "$best" "$v" | sed '/^$/d' | sort -V | tail -n 1)
	done
	printf '%s' "$best"
}
