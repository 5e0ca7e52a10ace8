// Package tooldocs is the host-side catalogue of the tools of every configured
// downstream MCP server. It answers the sandbox's discovery helpers
// (runtime.query_tool_docs and runtime.search_tool_docs) so that the model's
// prompt never has to carry every tool schema.
//
// The package owns four things:
//
//   - the alias rules that turn server and tool names into Python identifiers
//     (Aliases, SanitizeIdentifier), compatible with the reference bridge and
//     fixed where the reference produced unusable names (Python keywords as
//     server aliases, the alias "servers" that would overwrite mcp_servers);
//   - the Catalog: per server its name, alias, description and, once the server
//     has been listed, its tools. Servers that are configured but were never
//     started are kept too, so their descriptions stay discoverable;
//   - doc entries (Doc) with the reference's JSON shape and Query, which
//     mirrors query_tool_docs including its error texts;
//   - ranked search (Search): BM25F over tool name, title, description,
//     parameter names and descriptions and the server's own text, with
//     stemming, prefix matches and typo tolerance. Unlike the reference it
//     covers every server whose tools are known, not only the servers loaded
//     for the current call, and the index is updated per server when that
//     server's tool list changes.
//
// The package is pure computation: it never talks to MCP servers and imports
// nothing outside the standard library. Its contract is tested in this
// directory: alias tables, query errors, ranking on a realistic catalogue in
// testdata/ and on a generated 1,000-tool catalogue, and the fuzz targets
// FuzzSanitizeIdentifier and FuzzServerAlias.
package tooldocs
