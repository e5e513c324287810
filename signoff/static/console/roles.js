// What each role may do in the console, as the server decides it.

// The roles the server lets follow every queue, and those it lets decide
// (require_scope_role and require_reviewer_of on the server; admins pass both).
export const CONSOLE_USERS = new Set(["REVIEWER", "OPERATOR", "ADMIN"]);
export const DECIDERS = new Set(["REVIEWER", "ADMIN"]);
// The roles that may read and work incidents (require_role(OPERATOR) in
// signoff/resolvers/incident_response.py and operations.py; admins pass).
export const STAFF = new Set(["OPERATOR", "ADMIN"]);
// The Admin screens' role: the server refuses their reads and changes to anyone else
// (tokens and the claim mapping are admins' only; require_role(ADMIN) in signoff/resolvers).
export const ADMIN = "ADMIN";
