# bash completion for reclaimd(8); installed as /usr/share/bash-completion/completions/reclaimd.

# Where the cgroup2 mount is looked up; a variable so tests can point it at a fixture.
_reclaimd_mountinfo=/proc/self/mountinfo

# Prints the cgroup2 mount point as reclaimd finds it: the first cgroup2 entry of mountinfo.
# Not /sys/fs/cgroup: on hybrid hosts that is a tmpfs of v1 hierarchies and cgroup2 sits at
# /sys/fs/cgroup/unified. A line: "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw".
_reclaimd_cgroup2_mount() {
	local line
	local -a fields
	while IFS= read -r line; do
		[[ $line == *" - cgroup2 "* ]] || continue
		read -ra fields <<<"$line"
		# The kernel escapes space, tab, newline and backslash in paths as \ooo.
		printf '%b\n' "${fields[4]}"
		return 0
	done <"$_reclaimd_mountinfo"
	return 1
}

# Completes cgroup paths relative to the cgroup root ($1), for check-config --explain.
_reclaimd_cgroups() {
	local root=${1%/} dir
	[[ -n $root ]] || return
	while IFS= read -r dir; do
		COMPREPLY+=("${dir#"$root"/}/")
	done < <(compgen -d -- "$root/${cur#/}")
	compopt -o nospace
}

# COMPREPLY = the words of $1 that start with $cur.
_reclaimd_words() {
	mapfile -t COMPREPLY < <(compgen -W "$1" -- "$cur")
}

_reclaimd() {
	local cur prev words cword
	_init_completion -n : || return

	case $prev in
	-c | --config) _filedir '@(yaml|yml)'; return ;;
	--proc-root | --cgroup-root | --sys-root) _filedir -d; return ;;
	--status-socket | --socket | --metrics-file) _filedir; return ;;
	--log-level) _reclaimd_words 'trace debug info warn error off'; return ;;
	--record-limit) return ;; # a size: nothing to offer
	--metrics-listen)
		_reclaimd_words '127.0.0.1: [::1]: localhost:'
		__ltrim_colon_completions "$cur"
		compopt -o nospace
		return
		;;
	esac

	# The subcommand, if one was typed already; its FILE (check-config, record, replay) and
	# check-config's --explain.
	local i command='' cgroup_root='' file='' explain=''
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		-c | --config | --proc-root | --sys-root | --log-level | --status-socket | --socket | --metrics-file | --metrics-listen | \
			--record-limit)
			((i++)) ;;
		--cgroup-root) cgroup_root=${words[i + 1]}; ((i++)) ;;
		--explain) explain=1 ;;
		-*) ;;
		*)
			if [[ -z $command ]]; then
				case ${words[i]} in
				run | record | replay | probe | check-config | status) command=${words[i]} ;;
				esac
			elif [[ $command == @(check-config|record|replay) && -z $file ]]; then
				file=${words[i]}
			fi
			;;
		esac
	done

	local common='--config --proc-root --cgroup-root --sys-root --log-level --help'
	local run_flags='--dry-run --status-socket --metrics-file --metrics-listen'
	if [[ $cur == -* ]]; then
		case $command in
		'') _reclaimd_words "$common $run_flags --version" ;;
		run) _reclaimd_words "$common $run_flags" ;;
		record) _reclaimd_words "$common $run_flags --record-limit" ;;
		replay) _reclaimd_words '--help' ;;
		probe) _reclaimd_words '--config --proc-root --cgroup-root --sys-root --json --help' ;;
		status) _reclaimd_words '--socket --json --help' ;;
		check-config)
			if [[ -n $file ]]; then
				_reclaimd_words '--explain --help'
			else
				_reclaimd_words '--help'
			fi
			;;
		esac
		return
	fi
	case $command in
	'') _reclaimd_words 'run record replay probe check-config status' ;;
	record | replay) [[ -n $file ]] || _filedir ;;
	check-config)
		if [[ -z $file ]]; then
			_filedir '@(yaml|yml)'
		elif [[ $prev == --explain || -n $explain ]]; then
			_reclaimd_cgroups "${cgroup_root:-$(_reclaimd_cgroup2_mount)}"
		else
			_reclaimd_words '--explain'
		fi
		;;
	esac
} && complete -F _reclaimd reclaimd
