// Package toon encodes JSON-model data as TOON (Token-Oriented Object
// Notation), the compact line-oriented format codemode can use to render
// run_python results for a model.
//
// The encoder follows TOON specification 3.3 (the @toon-format/spec 3.3.2
// package): canonical numbers, minimal quoting with the §7.1 escape set,
// inline primitive arrays, tabular arrays of uniform objects, expanded lists,
// the comma/tab/pipe delimiters and optional safe key folding.
//
// Two entry points share one encoder. EncodeJSON parses JSON text itself so
// that object member order is kept (§2 requires encounter order) and numbers
// keep the exact value written in the text; it does not go through
// encoding/json or reflection. Encode accepts Go values; Go maps have no
// order, so their keys are sorted, and types the package does not know are
// marshalled with encoding/json first.
//
// Host normalization (§3) and the choices the specification leaves open:
//
//   - Numbers are exact decimals: EncodeJSON never rounds through float64, so
//     12345678901234567890 and 0.1000000000000000000001 are emitted digit for
//     digit. Magnitudes in [1e-6, 1e21) and zero are written in plain
//     decimal; others use exponent form with a lowercase e and an explicit
//     sign (1e+21, 1.5e-7), as §2 recommends. -0 becomes 0. A float64 or
//     float32 passed to Encode is written with the shortest digits that
//     round-trip, and NaN and ±Inf become null.
//   - A JSON object with a repeated member name keeps the position of the
//     first occurrence and the value of the last, as JavaScript's JSON.parse
//     does, so the output never repeats a key.
//   - JSON text must be valid UTF-8 and must not contain unpaired surrogate
//     escapes (\ud800): TOON has no way to write either, so both are errors.
//     Go strings passed to Encode have invalid bytes replaced by U+FFFD, as
//     encoding/json does.
//   - Strings are quoted exactly when §7.2 requires it. "Whitespace" there
//     is read as Unicode White_Space together with U+FEFF, which is what
//     JavaScript's trim strips besides, so a value that starts or ends with
//     a no-break space or U+0085 is quoted and survives decoders that trim
//     either set. (The reference encoder uses JavaScript's set alone and
//     leaves U+0085 bare.) Nothing else is quoted: "+5" and "#tag" are not
//     numeric-like or structural in 3.3.
//   - Empty arrays are written as "key: []" and "[]" (§9.1 SHOULD), except as
//     list items, where §9.2 requires "- [0]:".
//   - Key folding (§13.4, off by default) also folds a chain that ends at an
//     object with several members, writing "a.b:" above that object, as the
//     reference encoder does. Besides differing from all of its siblings, a
//     folded key must not spell, as a full path from the root, a dotted key
//     of the root object (the specification's collision fixture requires
//     this). flattenDepth caps the segments of a whole folded path. Unlike
//     the reference, the encoder folds the first field of a list-item
//     object like any other, and checks the later fields' folded keys
//     against that first key too.
//
// The package must not import anything outside the standard library. Its
// conformance is tested against every encode fixture of the specification
// package and differentially against the reference JavaScript encoder,
// @toon-format/toon 2.3.1, which implements the same specification version;
// the few inputs on which the two differ are pinned in reference_test.go
// (see also testdata/reference.mjs).
package toon
