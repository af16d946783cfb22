"""Schedules: a task run on a cron (in a timezone) or an interval, held by Temporal Schedules."""
