"""Pages of retrieval evaluations: starting jobs (`jobs`), the leaderboard (`leaderboard`), a run's
page (`runs`) and a comparison's page (`comparisons`).
"""
