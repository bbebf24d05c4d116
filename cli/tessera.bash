# bash completion for tessera(1); installed as share/bash-completion/completions/tessera.
# Each subcommand's options are the ones its usage line (cli/main.c) lists: tests/cli/options.sh
# checks they agree.

_tessera()
{
    local cur prev cmd opts
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "render preview profile check controller help --version --help" \
            -- "$cur"))
        return
    fi
    cmd=${COMP_WORDS[1]}
    if [[ $cmd == help || $cmd == --help || $cmd == -h ]]; then
        [[ $COMP_CWORD -eq 2 ]] &&
            COMPREPLY=($(compgen -W "render preview profile check controller help" -- "$cur"))
        return
    fi
    case $prev in
        --backend) COMPREPLY=($(compgen -W "cpu gpu auto" -- "$cur")); return ;;
        --progress) COMPREPLY=($(compgen -W "auto bar json none" -- "$cur")); return ;;
        --depth) COMPREPLY=($(compgen -W "8 16" -- "$cur")); return ;;
        -o)
            if [[ $cmd == render ]]; then
                COMPREPLY=($(compgen -W "- null tcp://" -- "$cur") $(compgen -f -- "$cur"))
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            return ;;
        --rate|--memory|--gpu-memory|--threads|--tile|--rows|--resume-at|--stall-timeout|\
        --region|--scale|--target|--seconds|--listen|--jobs)
            return ;; # a value of the user's
    esac
    case $cmd in
        render) opts="-o --rate --backend --memory --threads --framed --deflate --resume-at
                      --rows --progress --tile --stall-timeout --gpu-memory --gpus --help" ;;
        preview) opts="--region --scale -o --depth --fast --force --progress --backend --memory --threads
                       --tile --gpu-memory --help" ;;
        profile) opts="--region --seconds --backend --target --json --memory --threads --tile
                       --gpu-memory --gpus -o --framed --deflate --help" ;;
        check) opts="--tree --pixels --memory --threads --tile --help" ;;
        controller) opts="--listen --rate -o --jobs --stall-timeout --exit-on-abort --help" ;;
        *) return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    elif [[ $cmd != controller ]]; then
        COMPREPLY=($(compgen -f -X '!*.yaml' -- "$cur") $(compgen -f -X '!*.yml' -- "$cur")
                   $(compgen -d -- "$cur"))
    fi
}
complete -F _tessera tessera
