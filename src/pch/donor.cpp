// The donor unit of a precompiled header: it compiles the header once for every target that reuses it.
