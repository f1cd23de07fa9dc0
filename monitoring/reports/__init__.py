"""Reports to share and cite: an evaluation, a comparison or a monitor run as one self-contained HTML file,
and a comparison as a LaTeX or Markdown table with significance markers (`services`)."""
