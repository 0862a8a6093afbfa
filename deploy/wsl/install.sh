#!/usr/bin/env bash
# Sets reclaimd up in a WSL2 distribution (run as root inside it), after its Debian package is
# installed or with --deb FILE. With systemd as PID 1 ([boot] systemd=true in /etc/wsl.conf) it
# enables the unit; without systemd it adds a [boot] command to /etc/wsl.conf that starts
# reclaimd in the background (/usr/libexec/reclaimd/wsl-start: its log is
# /var/log/reclaimd.log, kept bounded), and starts it now.
# Host side (.wslconfig), Docker Desktop, and how to check it works: deploy/wsl/README.md.
#
# Usage: install.sh [--deb FILE] [--systemd | --boot-command] [--root DIR]
#   --systemd / --boot-command  choose the method instead of detecting systemd
#   --root DIR                  only edit DIR/etc/wsl.conf (used by tests/deploy)
set -euo pipefail

# What WSL runs at every start of the distribution (as root, with /bin/sh).
BOOT_CMD='/usr/libexec/reclaimd/wsl-start'
MARK=$BOOT_CMD

deb='' method='' root=''
while [ $# -gt 0 ]; do
	case $1 in
	--deb) deb=$2; shift 2 ;;
	--systemd) method=systemd; shift ;;
	--boot-command) method=boot; shift ;;
	--root) root=$2; shift 2 ;;
	*) echo "usage: $0 [--deb FILE] [--systemd | --boot-command] [--root DIR]" >&2; exit 64 ;;
	esac
done

# Adds (add) or takes out (remove) our command in wsl.conf's [boot] section, keeping everything
# else: another command stays and ours is appended after "; " (WSL runs the line with /bin/sh).
edit_wsl_conf() {
	local conf=$1 mode=$2
	mkdir -p "$(dirname "$conf")"
	touch "$conf"
	awk -v cmd="$BOOT_CMD" -v mark="$MARK" -v mode="$mode" '
	function add_line() { if (mode == "add" && !done) { print "command = " cmd; done = 1 } }
	/^[ \t]*\[/ {
		if (inboot) add_line()
		inboot = ($0 ~ /^[ \t]*\[boot\][ \t]*$/); if (inboot) seen = 1
		print; next
	}
	inboot && /^[ \t]*command[ \t]*=/ {
		val = $0; sub(/^[^=]*=[ \t]*/, "", val)
		q = ""; if (val ~ /^".*"$/) { q = "\""; val = substr(val, 2, length(val) - 2) }
		if (mode == "add") {
			if (index(val, mark)) print; else print "command = " q val "; " cmd q
			done = 1
		} else {
			n = index(val, "; " cmd)
			if (n) print "command = " q substr(val, 1, n - 1) q
			else if (val != cmd) print
		}
		next
	}
	{ print }
	END {
		if (mode == "add" && !done) { if (!seen) print "[boot]"; print "command = " cmd }
	}' "$conf" >"$conf.new"
	mv "$conf.new" "$conf"
}

# Docker Desktop's distributions (docker-desktop, and docker-desktop-data before Docker Desktop
# 4.30) are its own appliance: no package manager, replaced on every update. reclaimd belongs in
# the user's distribution, which shares their kernel and so their page cache.
refuse_docker_desktop() {
	local release=$1/etc/os-release name=${WSL_DISTRO_NAME:-}
	if [[ $name == docker-desktop* ]] || { [ -r "$release" ] && grep -q '^PRETTY_NAME="Docker Desktop"' "$release"; }; then
		echo "this is Docker Desktop's own distribution (${name:-docker-desktop}): install reclaimd in your" \
			"distribution instead (Ubuntu, Debian...); all WSL distributions share one kernel, so it" \
			"reclaims Docker Desktop's cache too (deploy/wsl/README.md, \"Docker Desktop\")" >&2
		exit 64
	fi
}
refuse_docker_desktop "$root"

if [ -n "$root" ]; then
	[ -n "$method" ] || { echo "--root needs --systemd or --boot-command" >&2; exit 64; }
	edit_wsl_conf "$root/etc/wsl.conf" "$([ "$method" = boot ] && echo add || echo remove)"
	exit 0
fi

[ "$(id -u)" = 0 ] || { echo "run as root inside the WSL distribution" >&2; exit 1; }
grep -qi microsoft /proc/sys/kernel/osrelease || echo "note: this does not look like WSL; going on" >&2
if [ -n "$deb" ]; then
	apt-get install -y --no-install-recommends "$(realpath "$deb")"
fi
[ -x /usr/sbin/reclaimd ] || { echo "reclaimd is not installed: pass --deb FILE (deploy/README.md)" >&2; exit 1; }

echo "== what this kernel offers"
/usr/sbin/reclaimd probe --config /etc/reclaimd/policy.yaml || {
	echo "reclaimd can reclaim nothing here; see deploy/wsl/README.md (cgroup_no_v1=all)" >&2
	exit 69
}

if [ -z "$method" ]; then
	if [ -d /run/systemd/system ]; then method=systemd; else method=boot; fi
fi
if [ "$method" = systemd ]; then
	edit_wsl_conf /etc/wsl.conf remove
	systemctl daemon-reload
	systemctl enable --now reclaimd.service
	echo "== enabled reclaimd.service; logs: journalctl -u reclaimd"
else
	edit_wsl_conf /etc/wsl.conf add
	if ! pidof reclaimd >/dev/null; then
		sh -c "$BOOT_CMD"
	fi
	echo "== started reclaimd; /etc/wsl.conf starts it at every boot; log: /var/log/reclaimd.log"
fi
if [ -d /mnt/wsl/docker-desktop ]; then
	echo "== Docker Desktop shares this VM: reclaimd reclaims its cache too; keep this distribution" \
		"running while Docker Desktop runs (deploy/wsl/README.md, \"Docker Desktop\")"
fi
cat <<'HOST'
== on the Windows host, in %UserProfile%\.wslconfig, then `wsl --shutdown`:
[wsl2]
pageReporting=true
[experimental]
autoMemoryReclaim=disabled
== check: `reclaimd status` here, and the host's memory with Get-Process vmmem* (deploy/wsl/README.md)
HOST
