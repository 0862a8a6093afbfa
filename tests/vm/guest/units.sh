# shellcheck shell=sh
# Phase u of neveridle.sh (sourced by it, after its helpers): quiet units (idle.units) on a real kernel.
# Without rules, a finished build's scope is reclaimed to reclaim.cgroup_floor (16 MiB) while an
# editor's service keeps the machine busy: user.slice/editor.service burns BURN_MS ms every
# second and re-reads its 32 MiB hot set (file4); user.slice/build.scope read 400 MiB
# (file0..3) and its work ended. Trimming is off, so what is written is the units' doing; the
# machine floor is 32 MiB, so the scope's own floor is what binds (with the default 128 MiB the
# machine's floor stops it first, as check-config --explain says). Runs UNITS_RUN_S (45) s:
# the scans that judge units come every 30 s, so the scope is quiet for the grace (10 s) at the
# second scan, about 30 s after reclaimd starts.
# Prints, every second:
#   @@USAMPLE t_ms=.. build_kib=.. editor_kib=.. editor_io=.. psi_editor_us=.. busy=.. idle=..
units_sample() {
	cg_file user.slice/build.scope
	_bk=$CGF
	cg_file user.slice/editor.service
	_ek=$CGF
	io_rbytes "$R/user.slice/editor.service"
	psi "$R/user.slice/editor.service/memory.pressure"
	read -r _ _u _n _s _i _w _q _sq _st _ </proc/stat
	now_ms
	echo "@@USAMPLE t_ms=$NOW_MS build_kib=$_bk editor_kib=$_ek editor_io=$IO psi_editor_us=$PSI" \
		"busy=$((_u + _n + _s + _q + _sq + _st)) idle=$((_i + _w))"
}

units_phase() {
	scenario units
	mkdir "$R/user.slice"
	echo "+memory +cpu +io" >"$R/user.slice/cgroup.subtree_control"
	mkdir "$R/user.slice/editor.service" "$R/user.slice/build.scope"
	cat >/tmp/units.yaml <<POLICY
idle:
  grace: 10s
reclaim:
  floor: 32M
trim:
  enabled: false
POLICY
	setup user.slice/editor.service user.slice/build.scope user.slice/editor.service \
		/data/file0 /data/file1 /data/file2 /data/file3
	observe units /tmp/units.yaml "${UNITS_RUN_S:-45}" units_sample
}
