"""Prompt assembly (DESIGN.md §5): the system prompt's pieces, skills and agent profiles.

`prompt.PromptBuilder` is the kernel's PromptSource; `fragments` holds the pieces,
`skills` and `profiles` read the files the model may choose from, `frontmatter` the
`---` headers those files start with.
"""
