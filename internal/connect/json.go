package connect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/tailscale/hujson"
)

// editJSON registers entry as codemode in a JSON (with comments) file's
// servers object at key and, with move, takes every other server out,
// returning them. Everything else in the file keeps its bytes.
func editJSON(orig []byte, key []string, entry map[string]any, move bool) ([]byte, map[string]map[string]any, error) {
	data, err := setServer(orig, key, ServerName, entry)
	if err != nil {
		return nil, nil, err
	}
	if !move {
		return data, nil, nil
	}
	root, err := hujson.Parse(data)
	if err != nil {
		return nil, nil, err
	}
	obj, _, err := find(&root, key)
	if err != nil || obj == nil {
		return nil, nil, err
	}
	moved := map[string]map[string]any{}
	kept := obj.Members[:0]
	for _, m := range obj.Members {
		name, err := memberName(m)
		if err != nil {
			return nil, nil, err
		}
		if name == ServerName {
			kept = append(kept, m)
			continue
		}
		v := m.Value.Clone()
		v.BeforeExtra, v.AfterExtra = nil, nil
		v.Standardize()
		e, err := jsonValue(v.Pack())
		if err != nil {
			return nil, nil, fmt.Errorf("server %q: %w", name, err)
		}
		moved[name] = e
	}
	if n := len(kept); n > 0 && len(kept) < len(obj.Members) {
		// The last member left decides the trailing comma: keep the
		// file's habit.
		last := obj.Members[len(obj.Members)-1].Value.AfterExtra
		kept[n-1].Value.AfterExtra = append(hujson.Extra(nil), last...)
	}
	obj.Members = kept
	return root.Pack(), moved, nil
}

// setServer sets member name of the servers object at key to val,
// creating the object (and the file's root) when missing. New text is
// indented like the file.
func setServer(orig []byte, key []string, name string, val map[string]any) ([]byte, error) {
	if len(bytes.TrimSpace(orig)) == 0 {
		orig = []byte("{}\n")
	}
	root, err := hujson.Parse(orig)
	if err != nil {
		return nil, err
	}
	unit := indentUnit(orig)
	if _, ok := root.Value.(*hujson.Object); !ok {
		return nil, errors.New("the top level is not an object")
	}
	obj, indent, err := find(&root, key)
	if err != nil {
		return nil, err
	}
	if obj == nil {
		// Create the missing part of the path at its deepest existing
		// object.
		parent, pIndent, depth := &root, "", 0
		for depth < len(key) {
			m := member(parent.Value.(*hujson.Object), key[depth])
			if m == nil {
				break
			}
			parent, pIndent = &m.Value, pIndent+unit
			depth++
		}
		var nested any = map[string]any{name: val}
		for i := len(key) - 1; i > depth; i-- {
			nested = map[string]any{key[i]: nested}
		}
		return put(&root, parent.Value.(*hujson.Object), pIndent, unit, key[depth], nested)
	}
	return put(&root, obj, indent, unit, name, val)
}

// put sets obj's member name to val and packs root. indent is obj's own
// indentation.
func put(root *hujson.Value, obj *hujson.Object, indent, unit, name string, val any) ([]byte, error) {
	memberIndent := indent + unit
	if len(obj.Members) > 0 {
		if ws := lastLine(obj.Members[0].Name.BeforeExtra); ws != "" {
			memberIndent = ws
		}
	}
	text, err := json.MarshalIndent(val, memberIndent, unit)
	if err != nil {
		return nil, err
	}
	v, err := hujson.Parse(text)
	if err != nil {
		return nil, err
	}
	if m := member(obj, name); m != nil {
		if sameJSON(m.Value, text) {
			return root.Pack(), nil
		}
		m.Value.Value = v.Value
		return root.Pack(), nil
	}
	nm := hujson.ObjectMember{
		Name:  hujson.Value{BeforeExtra: hujson.Extra("\n" + memberIndent), Value: hujson.String(name)},
		Value: hujson.Value{BeforeExtra: hujson.Extra(" "), Value: v.Value},
	}
	if n := len(obj.Members); n > 0 {
		// A trailing comma after the old last member stays one after the new.
		if obj.Members[n-1].Value.AfterExtra != nil {
			nm.Value.AfterExtra = hujson.Extra{}
		}
	} else if !bytes.Contains(obj.AfterExtra, []byte("/")) {
		obj.AfterExtra = hujson.Extra("\n" + indent)
	}
	obj.Members = append(obj.Members, nm)
	return root.Pack(), nil
}

// sameJSON reports whether v holds the same data as the JSON text.
func sameJSON(v hujson.Value, text []byte) bool {
	cur := v.Clone()
	cur.BeforeExtra, cur.AfterExtra = nil, nil
	cur.Standardize()
	var a, b any
	return json.Unmarshal(cur.Pack(), &a) == nil && json.Unmarshal(text, &b) == nil && reflect.DeepEqual(a, b)
}

// find returns the object at key and its indentation; nil when part of
// the path is missing.
func find(root *hujson.Value, key []string) (*hujson.Object, string, error) {
	v, indent := root, ""
	for i, k := range key {
		obj, ok := v.Value.(*hujson.Object)
		if !ok {
			return nil, "", fmt.Errorf("%s is not an object", strings.Join(key[:i], "."))
		}
		m := member(obj, k)
		if m == nil {
			return nil, "", nil
		}
		if ws := lastLine(m.Name.BeforeExtra); ws != "" {
			indent = ws
		}
		v = &m.Value
	}
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil, "", fmt.Errorf("%s is not an object", strings.Join(key, "."))
	}
	return obj, indent, nil
}

// member returns obj's member called name, or nil.
func member(obj *hujson.Object, name string) *hujson.ObjectMember {
	for i := range obj.Members {
		if n, err := memberName(obj.Members[i]); err == nil && n == name {
			return &obj.Members[i]
		}
	}
	return nil
}

func memberName(m hujson.ObjectMember) (string, error) {
	lit, ok := m.Name.Value.(hujson.Literal)
	if !ok {
		return "", errors.New("object member without a name")
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", fmt.Errorf("member name %s: %w", lit, err)
	}
	return s, nil
}

// lastLine returns the whitespace after the last newline of e, or "" when
// e has no newline (or something else follows it).
func lastLine(e hujson.Extra) string {
	i := bytes.LastIndexByte(e, '\n')
	if i < 0 {
		return ""
	}
	ws := string(e[i+1:])
	if strings.Trim(ws, " \t") != "" {
		return ""
	}
	return ws
}

// indentUnit guesses the file's indentation step from its first indented
// line (two spaces when there is none).
func indentUnit(data []byte) string {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		trimmed := bytes.TrimLeft(line, " \t")
		if len(trimmed) < len(line) && len(trimmed) > 0 {
			return string(line[:len(line)-len(trimmed)])
		}
	}
	return "  "
}

// jsonServerNames lists the members of the servers object at key.
func jsonServerNames(data []byte, key []string) ([]string, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	root, err := hujson.Parse(data)
	if err != nil {
		return nil, err
	}
	if _, ok := root.Value.(*hujson.Object); !ok {
		return nil, errors.New("the top level is not an object")
	}
	obj, _, err := find(&root, key)
	if err != nil || obj == nil {
		return nil, err
	}
	var names []string
	for _, m := range obj.Members {
		n, err := memberName(m)
		if err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, nil
}
