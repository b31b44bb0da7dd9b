# SPDX-License-Identifier: MIT
# bash completion for tensorfs (installed as
# share/bash-completion/completions/tensorfs).  Subcommands, their options
# and the -o mount options are read from `tensorfs --help` and
# `tensorfs CMD --help`, so they follow the installed binary; for cat,
# xattr and stats, the tensor paths of the given file from
# `tensorfs ls --json`.

# the tensor paths of container $1 (ls --json: one "path" line each)
_tensorfs_paths()
{
	"$1" ls --json "$2" 2>/dev/null |
		sed -n 's/^  "path": "\(.*\)",$/\1/p' |
		sed 's/\\"/"/g; s/\\\\/\\/g'
}

_tensorfs()
{
	local cur prev cmd i inputs=() words_after=0
	local bin=${COMP_WORDS[0]}

	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	[ "$COMP_CWORD" -gt 1 ] && cmd=${COMP_WORDS[1]}

	# the first word: a subcommand, an option or a file
	if [ "$COMP_CWORD" -eq 1 ]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-o -f -d --help --version" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$("$bin" --help 2>/dev/null |
				sed -n 's/^ *tensorfs \([a-z]\+\) .*/\1/p' | sort -u)" -- "$cur"))
			COMPREPLY+=($(compgen -f -- "$cur"))
		fi
		return
	fi
	# -o OPT[,OPT]: the mount options of --help
	if [ "$prev" = -o ]; then
		local opts pre=
		opts=$("$bin" --help 2>/dev/null | sed '/^FUSE options:/,$d' |
			grep -oE -- '-o [a-z_]+=?' | sed 's/^-o //' | sort -u)
		[[ $cur == *,* ]] && pre=${cur%,*},
		COMPREPLY=($(compgen -P "$pre" -W "$opts" -- "${cur##*,}"))
		compopt -o nospace 2>/dev/null
		return
	fi
	case $cmd in
	ls | cat | info | xattr | verify | stats | diff | convert | pack)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "$("$bin" "$cmd" --help 2>/dev/null |
				grep -oE -- '--[a-z][a-z-]*' | sort -u)" -- "$cur"))
			return
		fi
		# the inputs so far (words not options, after the subcommand)
		for ((i = 2; i < COMP_CWORD; i++)); do
			case ${COMP_WORDS[i]} in
			--as) ((i++)) ;;
			-*) ;;
			*) inputs+=("${COMP_WORDS[i]}") ;;
			esac
		done
		# cat INPUT NAME, xattr INPUT [PATH], stats INPUT [NAME...]:
		# the tensors of INPUT once it is given
		case $cmd in
		cat | xattr | stats)
			if [ "${#inputs[@]}" -ge 1 ] && [ -e "${inputs[0]}" ]; then
				local IFS=$'\n'
				COMPREPLY=($(compgen -W "$(_tensorfs_paths "$bin" "${inputs[0]}")" -- "$cur"))
				[ "$cmd" = cat ] && COMPREPLY+=($(compgen -f -- "$cur"))
				return
			fi
			;;
		esac
		[ "$prev" = --as ] && { COMPREPLY=($(compgen -W float32 -- "$cur")); return; }
		COMPREPLY=($(compgen -f -- "$cur"))
		;;
	*)
		COMPREPLY=($(compgen -f -- "$cur"))
		;;
	esac
}
complete -o filenames -F _tensorfs tensorfs
