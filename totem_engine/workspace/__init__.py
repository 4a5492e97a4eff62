"""The project on disk as tools and checks share it: paths confined to the root, the walk that
honours .gitignore, glob dialect, ripgrep, shell words, unified diffs, and the ``Workspace``
through which files are read and written (``files``). Imports no tool."""
