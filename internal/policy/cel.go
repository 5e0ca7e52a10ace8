package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
)

// The variables a condition sees.
const (
	varServer      = "server"
	varTool        = "tool"
	varArgs        = "args"
	varAnnotations = "annotations"
	varPrincipal   = "principal"
	varClaims      = "claims"
	varSession     = "session"
)

// newEnv declares the condition language: CEL's standard library, the
// string extensions, optional values (args.?path.orValue("")) and
// comparisons across int and double, since JSON arguments arrive as
// doubles.
func newEnv() (*cel.Env, error) {
	dynMap := cel.MapType(cel.StringType, cel.DynType)
	return cel.NewEnv(
		cel.Variable(varServer, cel.StringType),
		cel.Variable(varTool, cel.StringType),
		cel.Variable(varArgs, dynMap),
		cel.Variable(varAnnotations, dynMap),
		cel.Variable(varPrincipal, cel.StringType),
		cel.Variable(varClaims, dynMap),
		cel.Variable(varSession, cel.StringType),
		ext.Strings(),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
	)
}

// condition is a compiled when.
type condition struct {
	src  string
	prog cel.Program // full evaluation (Decide)
	part cel.Program // partial evaluation (Hidden, ServerDecision)
	// loops is set when the condition has comprehensions (all, exists,
	// map, filter...), the only expressions whose cost grows beyond the
	// size of the values they read. Only those watch the context, which
	// costs more than the evaluation of a simple condition.
	loops bool
}

// interruptEvery is how many comprehension steps pass between checks of
// the context, so a condition looping over huge arguments can be stopped.
const interruptEvery = 100

// compileCondition compiles src, which must be a bool expression. Errors
// carry the position inside the expression.
func compileCondition(env *cel.Env, src string) (*condition, error) {
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		var msgs []string
		for _, e := range iss.Errors() {
			msgs = append(msgs, fmt.Sprintf("%s (at %d:%d of the condition)", e.Message, e.Location.Line(), e.Location.Column()+1))
		}
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) {
		return nil, fmt.Errorf("the condition is of type %s, want bool (compare it: ... == true)", t)
	}
	prog, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(interruptEvery))
	if err != nil {
		return nil, err
	}
	part, err := env.Program(ast, cel.EvalOptions(cel.OptPartialEval), cel.InterruptCheckFrequency(interruptEvery))
	if err != nil {
		return nil, err
	}
	loops := len(celast.MatchDescendants(celast.NavigateAST(ast.NativeRep()), celast.KindMatcher(celast.ComprehensionKind))) > 0
	return &condition{src: src, prog: prog, part: part, loops: loops}, nil
}

// eval runs the condition on a call.
func (c *condition) eval(ctx context.Context, act *activation) (bool, error) {
	var out ref.Val
	var err error
	if c.loops {
		out, _, err = c.prog.ContextEval(ctx, act)
	} else {
		out, _, err = c.prog.Eval(act)
	}
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("the condition gave %s, not a bool", out.Type())
	}
	return bool(b), nil
}

// tri is the outcome of a test on partly known input.
type tri uint8

const (
	no tri = iota
	maybe
	yes
)

func (a tri) and(b tri) tri { return min(a, b) }

// partialVars binds the variables in known; the others are unknown.
func partialVars(known map[string]any) (cel.PartialActivation, error) {
	var unknown []*cel.AttributePatternType
	for _, v := range [...]string{varServer, varTool, varArgs, varAnnotations, varPrincipal, varClaims, varSession} {
		if _, ok := known[v]; !ok {
			unknown = append(unknown, cel.AttributePattern(v))
		}
	}
	return cel.PartialVars(known, unknown...)
}

// evalPartial runs the condition on partly known variables. Errors count
// as maybe: the callers only want certainty.
func (c *condition) evalPartial(ctx context.Context, vars cel.PartialActivation) tri {
	var out ref.Val
	var err error
	if c.loops {
		out, _, err = c.part.ContextEval(ctx, vars)
	} else {
		out, _, err = c.part.Eval(vars)
	}
	if err != nil || types.IsUnknown(out) {
		return maybe
	}
	if b, ok := out.(types.Bool); ok {
		if b {
			return yes
		}
		return no
	}
	return maybe
}

// activation hands an Input to CEL without copying it into a map, and
// decodes ArgsJSON only if a condition reads args.
type activation struct {
	in       *Input
	args     any
	argsRead bool
}

var _ interpreter.Activation = (*activation)(nil)

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varServer:
		return types.String(a.in.Server), true
	case varTool:
		return types.String(a.in.Tool), true
	case varPrincipal:
		return types.String(a.in.Principal), true
	case varSession:
		return types.String(a.in.Session), true
	case varAnnotations:
		return emptyIfNil(a.in.Annotations), true
	case varClaims:
		return emptyIfNil(a.in.Claims), true
	case varArgs:
		if !a.argsRead {
			a.argsRead = true
			a.args = a.decodeArgs()
		}
		return a.args, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

func (a *activation) decodeArgs() any {
	if a.in.Args != nil || len(a.in.ArgsJSON) == 0 {
		return emptyIfNil(a.in.Args)
	}
	var m map[string]any
	if err := json.Unmarshal(a.in.ArgsJSON, &m); err != nil {
		return types.WrapErr(fmt.Errorf("the arguments are not a JSON object: %w", err))
	}
	return emptyIfNil(m)
}

// emptyIfNil gives CEL an empty map for a missing one, so that has() and
// lookups behave as on any map.
func emptyIfNil(m map[string]any) ref.Val {
	if m == nil {
		m = map[string]any{}
	}
	return types.NewStringInterfaceMap(types.DefaultTypeAdapter, m)
}
