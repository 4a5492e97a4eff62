"""The Total.js file both editor end-to-end tests edit, and the edit the scripted agent makes.

The handler is var-first, so it has no convention finding before the edit; the edit declares a
`const` inside the function, which Totem's rule TJS010 flags (source `totem`).
"""

ORIGINAL = """exports.install = function() {
\tROUTE('GET /api/hello/', hello);
};

function hello() {
\tvar name = 'world';
\tthis.plain('Hello ' + name);
}
"""
OLD = "\tvar name = 'world';\n\tthis.plain('Hello ' + name);\n"
NEW = "\tconst greeting = 'Hello there, ';\n\tvar name = 'world';\n\tthis.plain(greeting + name + '!');\n"
EDITED = ORIGINAL.replace(OLD, NEW)
