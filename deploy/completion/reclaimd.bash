# bash completion for reclaimd(8); installed as /usr/share/bash-completion/completions/reclaimd.

# Cgroup paths relative to the cgroup root ($1, --cgroup-root if given), for check-config --explain.
_reclaimd_cgroups() {
	local root=${1%/} dir
	local IFS=$'\n'
	for dir in $(compgen -d -- "$root/${cur#/}"); do
		COMPREPLY+=("${dir#"$root"/}/")
	done
	compopt -o nospace
}

_reclaimd() {
	local cur prev words cword
	_init_completion -n : || return

	case $prev in
	-c | --config) _filedir '@(yaml|yml)'; return ;;
	--proc-root | --cgroup-root) _filedir -d; return ;;
	--status-socket | --socket | --metrics-file) _filedir; return ;;
	--log-level) COMPREPLY=($(compgen -W 'trace debug info warn error off' -- "$cur")); return ;;
	--metrics-listen)
		COMPREPLY=($(compgen -W '127.0.0.1: [::1]: localhost:' -- "$cur"))
		__ltrim_colon_completions "$cur"
		compopt -o nospace
		return
		;;
	esac

	# The subcommand, if one was typed already; for check-config, its FILE and --explain.
	local i command= cgroup_root=/sys/fs/cgroup file= explain=
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		-c | --config | --proc-root | --log-level | --status-socket | --socket | --metrics-file | --metrics-listen)
			((i++)) ;;
		--cgroup-root) cgroup_root=${words[i + 1]}; ((i++)) ;;
		--explain) explain=1 ;;
		-*) ;;
		*)
			if [[ -z $command ]]; then
				case ${words[i]} in
				run | probe | check-config | status) command=${words[i]} ;;
				esac
			elif [[ $command == check-config && -z $file ]]; then
				file=${words[i]}
			fi
			;;
		esac
	done

	local common='--config --proc-root --cgroup-root --log-level --help'
	local run_flags='--dry-run --status-socket --metrics-file --metrics-listen'
	if [[ $cur == -* ]]; then
		case $command in
		'') COMPREPLY=($(compgen -W "$common $run_flags --version" -- "$cur")) ;;
		run) COMPREPLY=($(compgen -W "$common $run_flags" -- "$cur")) ;;
		probe) COMPREPLY=($(compgen -W '--config --proc-root --cgroup-root --help' -- "$cur")) ;;
		status) COMPREPLY=($(compgen -W '--socket --help' -- "$cur")) ;;
		check-config)
			if [[ -n $file ]]; then
				COMPREPLY=($(compgen -W '--explain --help' -- "$cur"))
			else
				COMPREPLY=($(compgen -W '--help' -- "$cur"))
			fi
			;;
		esac
		return
	fi
	case $command in
	'') COMPREPLY=($(compgen -W 'run probe check-config status' -- "$cur")) ;;
	check-config)
		if [[ -z $file ]]; then
			_filedir '@(yaml|yml)'
		elif [[ $prev == --explain || -n $explain ]]; then
			_reclaimd_cgroups "$cgroup_root"
		else
			COMPREPLY=($(compgen -W '--explain' -- "$cur"))
		fi
		;;
	esac
} && complete -F _reclaimd reclaimd
