package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// bashCompletion asks bootctl itself for the words that may follow (urfave/cli's
// --generate-bash-completion), so that it follows the command tree of the installed binary.
//
// The headers say ~/.bashrc and ~/.zshrc, never a system-wide directory: on Debian, systemd-boot
// owns the name bootctl and its completion, which a file in /etc/bash_completion.d would replace
// for every user (README, Install).
const bashCompletion = `# bash completion for bootfabric's bootctl; add to ~/.bashrc:
#   source <(bootctl completion bash)
# (not /etc/bash_completion.d: systemd-boot's bootctl has that name and completion there)
_bootctl_complete() {
  local cur words cword
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  words=("${COMP_WORDS[@]:0:COMP_CWORD}")
  local opts
  if [[ "$cur" == -* ]]; then
    opts=$("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${words[@]}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
  return 0
}
complete -o bashdefault -o default -F _bootctl_complete bootctl
`

// zshCompletion is the same for zsh.
const zshCompletion = `#compdef bootctl
# zsh completion for bootfabric's bootctl; add to ~/.zshrc (after compinit):
#   source <(bootctl completion zsh)
# (not a system-wide $fpath directory: systemd-boot's bootctl has that name)
_bootctl() {
  local -a opts
  local cur=${words[-1]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
if [[ "$funcstack[1]" == "_bootctl" ]]; then
  _bootctl "$@"
else
  compdef _bootctl bootctl
fi
`

// completionCommand prints a shell completion script generated from the command tree.
func completionCommand(e *env) *cli.Command {
	shells := []string{"bash", "zsh", "fish"}
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		ArgsUsage: "SHELL",
		Description: "bash: source <(bootctl completion bash)\n" +
			"zsh:  bootctl completion zsh > \"${fpath[1]}/_bootctl\"\n" +
			"fish: bootctl completion fish > ~/.config/fish/completions/bootctl.fish",
		Action: func(c *cli.Context) error {
			switch sh := c.Args().First(); sh {
			case "bash":
				_, err := fmt.Fprint(e.stdout, bashCompletion)
				return err
			case "zsh":
				_, err := fmt.Fprint(e.stdout, zshCompletion)
				return err
			case "fish":
				text, err := c.App.ToFishCompletion()
				if err != nil {
					return err
				}
				_, err = fmt.Fprint(e.stdout, text)
				return err
			default:
				return badInput("%q is not one of %s", sh, strings.Join(shells, ", "))
			}
		},
	}
}

// manSection is the manual section of bootctl's page: 1, user commands, as the README says
// (bootctl(1)); urfave/cli's ToMan would write 8.
const manSection = 1

// manCommand prints bootctl(1), generated from the command tree.
func manCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "man",
		Usage: "print the manual page (roff), generated from the commands and flags: bootctl man | man -l -",
		Action: func(c *cli.Context) error {
			text, err := c.App.ToManWithSection(manSection)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(e.stdout, text)
			return err
		},
	}
}
