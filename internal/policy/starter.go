package policy

// Starter is the text of a commented starter policy in TOML (codemode
// policy init writes it): allow by default, ask before destructive tools.
func Starter() string { return starter }

const starter = `# codemode policy: what the Python that codemode runs may do with your MCP
# servers. codemode reads this file at start, again whenever it changes, and
# on SIGHUP; a file with a mistake is refused and the previous policy stays.
#
# Each nested tool call is checked against the rules in order. The first rule
# whose server, tool and when all match decides:
#   allow  the call goes ahead
#   deny   the call fails with the rule's reason
#   ask    you are asked to approve the call first
# A call that no rule matches gets the default.
default = "allow"

# Ask before any tool that declares itself destructive (MCP's destructiveHint).
# Leaving out server and tool makes a rule apply to every call.
[[rules]]
when = 'has(annotations.destructiveHint) && annotations.destructiveHint == true'
decision = "ask"
reason = "the tool says it may destroy data"

# More rules, to adapt and uncomment. Patterns use * ? and [...]; a condition
# is a CEL expression over server, tool, args (the arguments sent),
# annotations, principal (who calls), claims (their JWT claims) and session.
#
# Keep agents out of one file, and record only a hash of the arguments:
# [[rules]]
# server = "filesystem"
# tool = "write_*"
# when = 'args.?path.orValue("").endsWith(".env")'
# decision = "deny"
# reason = "agents may not write .env files"
# redact = true
#
# Hide a server completely (it is not started and its tools are not listed):
# [[rules]]
# server = "scratch"
# decision = "deny"
# reason = "not for agents"

# Limits on nested calls (0 or absent: unlimited).
# [limits]
# max_calls_per_run = 200      # per run_python call
# max_concurrent_calls = 16    # per caller; further calls wait
# calls_per_minute = 600       # per caller
`
