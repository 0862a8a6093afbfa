# bash completion for reclaimd(8); installed as /usr/share/bash-completion/completions/reclaimd.
_reclaimd() {
	local cur prev words cword
	_init_completion || return

	case $prev in
	-c | --config) _filedir '@(yaml|yml)'; return ;;
	--proc-root | --cgroup-root) _filedir -d; return ;;
	--status-socket | --socket | --metrics-file) _filedir; return ;;
	--log-level) COMPREPLY=($(compgen -W 'trace debug info warn error off' -- "$cur")); return ;;
	--metrics-listen) COMPREPLY=($(compgen -W '127.0.0.1:' -- "$cur")); compopt -o nospace; return ;;
	esac

	# The subcommand, if one was typed already.
	local i command=
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		run | probe | check-config | status) command=${words[i]}; break ;;
		esac
	done

	local common='--config --proc-root --cgroup-root --log-level --dry-run --help'
	if [[ $cur == -* ]]; then
		case $command in
		'') COMPREPLY=($(compgen -W "$common --version" -- "$cur")) ;;
		run) COMPREPLY=($(compgen -W "$common --status-socket --metrics-file --metrics-listen" -- "$cur")) ;;
		probe) COMPREPLY=($(compgen -W "$common" -- "$cur")) ;;
		status) COMPREPLY=($(compgen -W '--socket --help' -- "$cur")) ;;
		check-config) COMPREPLY=($(compgen -W '--help' -- "$cur")) ;;
		esac
		return
	fi
	case $command in
	'') COMPREPLY=($(compgen -W 'run probe check-config status' -- "$cur")) ;;
	check-config) _filedir '@(yaml|yml)' ;;
	esac
} && complete -F _reclaimd reclaimd
