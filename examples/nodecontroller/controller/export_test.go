package controller

// ApplyMergePatch applies an RFC 7386 JSON merge patch, for the fake API
// server of the external tests.
var ApplyMergePatch = mergePatch
