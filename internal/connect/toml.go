package connect

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// editTOML registers entry as codemode in Codex's config.toml, as a
// [table.codemode] section appended to the file, and with move cuts every
// other [table.NAME] section (and its sub-tables such as
// [table.NAME.env]) out, returning the servers. Lines outside those
// sections keep their bytes. Servers written as inline tables cannot be
// moved this way and are refused.
func editTOML(orig []byte, table string, entry map[string]any, move bool) ([]byte, map[string]map[string]any, error) {
	var doc map[string]any
	if err := toml.Unmarshal(orig, &doc); err != nil {
		return nil, nil, err
	}
	servers, _ := doc[table].(map[string]any)
	var moved map[string]map[string]any
	data := orig
	if move {
		moved = map[string]map[string]any{}
		for name, v := range servers {
			if name == ServerName {
				continue
			}
			e, ok := v.(map[string]any)
			if !ok {
				return nil, nil, fmt.Errorf("%s.%s is not a table", table, name)
			}
			moved[name] = e
		}
		var err error
		if data, err = cutSections(data, table, sortedKeys(moved)); err != nil {
			return nil, nil, err
		}
	}
	if cur, ok := servers[ServerName].(map[string]any); ok {
		if cur["command"] == entry["command"] {
			return data, moved, nil
		}
		var err error
		if data, err = cutSections(data, table, []string{ServerName}); err != nil {
			return nil, nil, err
		}
	}
	var b bytes.Buffer
	b.Write(data)
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		b.WriteByte('\n')
	}
	if len(data) > 0 {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[%s.%s]\n", table, ServerName)
	for _, k := range sortedKeys(entry) {
		fmt.Fprintf(&b, "%s = %s\n", k, strconv.Quote(fmt.Sprint(entry[k])))
	}
	out := b.Bytes()
	var check map[string]any
	if err := toml.Unmarshal(out, &check); err != nil {
		return nil, nil, fmt.Errorf("the edited file would not parse: %w", err)
	}
	return out, moved, nil
}

var tomlHeader = regexp.MustCompile(`^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$`)

// cutSections removes the sections [table.NAME] and [table.NAME.*] for
// each name, and fails when a name is still defined afterwards (an inline
// table, or a dotted key under [table]).
func cutSections(data []byte, table string, names []string) ([]byte, error) {
	lines := strings.SplitAfter(string(data), "\n")
	var out []string
	cutting := false
	for _, line := range lines {
		if m := tomlHeader.FindStringSubmatch(strings.TrimRight(line, "\r\n")); m != nil {
			path := splitKey(m[1])
			cutting = len(path) >= 2 && path[0] == table && slices.Contains(names, path[1])
		}
		if !cutting {
			out = append(out, line)
		}
	}
	res := []byte(strings.Join(out, ""))
	var doc map[string]any
	if err := toml.Unmarshal(res, &doc); err != nil {
		return nil, fmt.Errorf("after removing servers: %w", err)
	}
	servers, _ := doc[table].(map[string]any)
	for _, n := range names {
		if _, ok := servers[n]; ok {
			return nil, fmt.Errorf("server %q is not written as a [%s.%s] section; move it by hand", n, table, n)
		}
	}
	return res, nil
}

// splitKey splits a dotted TOML key, unquoting quoted parts.
func splitKey(k string) []string {
	var parts []string
	for k != "" {
		k = strings.TrimSpace(k)
		var part string
		switch {
		case strings.HasPrefix(k, `"`):
			end := strings.Index(k[1:], `"`)
			if end < 0 {
				return append(parts, k)
			}
			part, _ = strconv.Unquote(k[:end+2])
			k = k[end+2:]
		case strings.HasPrefix(k, `'`):
			end := strings.Index(k[1:], `'`)
			if end < 0 {
				return append(parts, k)
			}
			part, k = k[1:end+1], k[end+2:]
		default:
			i := strings.IndexByte(k, '.')
			if i < 0 {
				i = len(k)
			}
			part, k = strings.TrimSpace(k[:i]), k[i:]
		}
		parts = append(parts, part)
		k = strings.TrimPrefix(strings.TrimSpace(k), ".")
	}
	return parts
}

// tomlServerNames lists the servers of a TOML file's table.
func tomlServerNames(data []byte, table string) ([]string, error) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	servers, ok := doc[table].(map[string]any)
	if !ok && doc[table] != nil {
		return nil, errors.New(table + " is not a table")
	}
	return sortedKeys(servers), nil
}
