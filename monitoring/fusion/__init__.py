"""Fusion of a team's runs into a new run of the team (`evalcore.fusion`, ranx's methods), as a job."""
