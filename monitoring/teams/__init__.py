"""A team's home page (`views`) and the API's list of my teams with my role in each (`api`)."""
