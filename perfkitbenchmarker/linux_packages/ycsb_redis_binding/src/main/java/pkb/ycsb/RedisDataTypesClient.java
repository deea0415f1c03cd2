package pkb.ycsb;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.UnifiedJedis;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * A YCSB binding that stores each record as one of five Redis data types.
 *
 * <p>YCSB's own Redis binding stores every record as a hash. This one picks
 * the type with {@code redis.command_group}:
 * <ul>
 *   <li>{@code string}: the record's single field is the key's value
 *       (SET/GET); needs {@code fieldcount=1}.
 *   <li>{@code hash}: one hash field per record field (HSET/HMGET/HGETALL).
 *   <li>{@code list}: element i holds field i (RPUSH/LRANGE/LSET).
 *   <li>{@code set}: one member {@code <field>:<value>} per field
 *       (SADD/SMEMBERS; an update removes the field's old member).
 *   <li>{@code zset}: one member {@code <field>:<value>} per field, scored
 *       by the field's index (ZADD/ZRANGE; an update replaces the member at
 *       that score).
 * </ul>
 *
 * <p>Properties: {@code redis.host}, {@code redis.port} (or
 * {@code redis.hosts=h:p,h:p}), {@code redis.user}, {@code redis.password}
 * (from a {@code -P} property file; the environment variable
 * {@code PKB_YCSB_REDIS_PASSWORD} when the property is absent; never give it
 * on the command line), {@code redis.timeout} (ms), {@code redis.cluster}
 * ({@code true}: one Redis Cluster through JedisCluster; otherwise each key
 * goes to one of the standalone hosts by its hash). Scans are not
 * implemented (workloads A-D and F need none).
 */
public class RedisDataTypesClient extends DB {
  public static final String PASSWORD_ENV = "PKB_YCSB_REDIS_PASSWORD";

  enum Group { STRING, HASH, LIST, SET, ZSET }

  private Group group;
  private String fieldPrefix;
  private int fieldCount;
  private List<UnifiedJedis> clients;

  @Override
  public void init() throws DBException {
    Properties props = getProperties();
    String name = props.getProperty("redis.command_group", "hash");
    try {
      group = Group.valueOf(name.trim().toUpperCase());
    } catch (IllegalArgumentException e) {
      throw new DBException("redis.command_group=" + name
          + ": choose string, hash, list, set or zset");
    }
    fieldPrefix = props.getProperty("fieldnameprefix", "field");
    fieldCount = Integer.parseInt(props.getProperty("fieldcount", "10"));
    if (group == Group.STRING && fieldCount != 1) {
      throw new DBException("redis.command_group=string stores one value per"
          + " key: set fieldcount=1 (it is " + fieldCount + ")");
    }
    String password = props.getProperty("redis.password");
    if (password == null || password.isEmpty()) {
      password = System.getenv(PASSWORD_ENV);
    }
    DefaultJedisClientConfig.Builder builder = DefaultJedisClientConfig.builder()
        .timeoutMillis(Integer.parseInt(props.getProperty("redis.timeout", "2000")));
    String user = props.getProperty("redis.user");
    if (user != null && !user.isEmpty()) {
      builder.user(user);
    }
    if (password != null && !password.isEmpty()) {
      builder.password(password);
    }
    JedisClientConfig config = builder.build();
    List<HostAndPort> hosts = parseHosts(props);
    clients = new ArrayList<>();
    try {
      if (Boolean.parseBoolean(props.getProperty("redis.cluster", "false"))) {
        clients.add(new JedisCluster(new HashSet<>(hosts), config));
      } else {
        for (HostAndPort host : hosts) {
          clients.add(new JedisPooled(host, config));
        }
      }
    } catch (RuntimeException e) {
      throw new DBException("cannot connect to Redis: " + e.getMessage(), e);
    }
  }

  private static List<HostAndPort> parseHosts(Properties props) throws DBException {
    List<HostAndPort> hosts = new ArrayList<>();
    String list = props.getProperty("redis.hosts", "");
    for (String item : list.split(",")) {
      String text = item.trim();
      if (text.isEmpty()) {
        continue;
      }
      int colon = text.lastIndexOf(':');
      if (colon <= 0) {
        throw new DBException("redis.hosts entry '" + text + "' is not host:port");
      }
      hosts.add(new HostAndPort(text.substring(0, colon),
          Integer.parseInt(text.substring(colon + 1))));
    }
    if (hosts.isEmpty()) {
      hosts.add(new HostAndPort(props.getProperty("redis.host", "127.0.0.1"),
          Integer.parseInt(props.getProperty("redis.port", "6379"))));
    }
    return hosts;
  }

  @Override
  public void cleanup() throws DBException {
    for (UnifiedJedis client : clients) {
      client.close();
    }
  }

  private UnifiedJedis client(String key) {
    if (clients.size() == 1) {
      return clients.get(0);
    }
    return clients.get(Math.floorMod(key.hashCode(), clients.size()));
  }

  /** The field's position in the record, from its name (field7 -> 7). */
  private int fieldIndex(String field) {
    try {
      return Integer.parseInt(field.substring(fieldPrefix.length()));
    } catch (RuntimeException e) {
      return -1;
    }
  }

  private static String member(String field, String value) {
    return field + ":" + value;
  }

  private static void putMember(String member, Set<String> fields,
                                Map<String, ByteIterator> result) {
    int colon = member.indexOf(':');
    if (colon < 0) {
      return;
    }
    String field = member.substring(0, colon);
    if (fields == null || fields.contains(field)) {
      result.put(field, new StringByteIterator(member.substring(colon + 1)));
    }
  }

  @Override
  public Status read(String table, String key, Set<String> fields,
                     Map<String, ByteIterator> result) {
    try {
      UnifiedJedis jedis = client(key);
      switch (group) {
        case STRING: {
          String value = jedis.get(key);
          if (value == null) {
            return Status.NOT_FOUND;
          }
          result.put(fieldPrefix + "0", new StringByteIterator(value));
          return Status.OK;
        }
        case HASH: {
          if (fields == null) {
            Map<String, String> all = jedis.hgetAll(key);
            if (all.isEmpty()) {
              return Status.NOT_FOUND;
            }
            StringByteIterator.putAllAsByteIterators(result, all);
            return Status.OK;
          }
          String[] names = fields.toArray(new String[0]);
          List<String> values = jedis.hmget(key, names);
          for (int i = 0; i < names.length; i++) {
            if (values.get(i) != null) {
              result.put(names[i], new StringByteIterator(values.get(i)));
            }
          }
          return result.isEmpty() ? Status.NOT_FOUND : Status.OK;
        }
        case LIST: {
          List<String> values = jedis.lrange(key, 0, -1);
          for (int i = 0; i < values.size(); i++) {
            String field = fieldPrefix + i;
            if (fields == null || fields.contains(field)) {
              result.put(field, new StringByteIterator(values.get(i)));
            }
          }
          return values.isEmpty() ? Status.NOT_FOUND : Status.OK;
        }
        case SET: {
          Set<String> members = jedis.smembers(key);
          for (String m : members) {
            putMember(m, fields, result);
          }
          return members.isEmpty() ? Status.NOT_FOUND : Status.OK;
        }
        case ZSET: {
          List<String> members = jedis.zrange(key, 0, -1);
          for (String m : members) {
            putMember(m, fields, result);
          }
          return members.isEmpty() ? Status.NOT_FOUND : Status.OK;
        }
        default:
          return Status.BAD_REQUEST;
      }
    } catch (RuntimeException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount,
                     Set<String> fields, Vector<HashMap<String, ByteIterator>> result) {
    return Status.NOT_IMPLEMENTED;
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      UnifiedJedis jedis = client(key);
      Map<String, String> fields = StringByteIterator.getStringMap(values);
      switch (group) {
        case STRING:
          jedis.set(key, fields.values().iterator().next());
          return Status.OK;
        case HASH:
          jedis.hset(key, fields);
          return Status.OK;
        case LIST: {
          String[] ordered = new String[fields.size()];
          for (Map.Entry<String, String> e : fields.entrySet()) {
            int index = fieldIndex(e.getKey());
            if (index < 0 || index >= ordered.length) {
              return Status.BAD_REQUEST;
            }
            ordered[index] = e.getValue();
          }
          jedis.del(key);
          jedis.rpush(key, ordered);
          return Status.OK;
        }
        case SET: {
          Set<String> members = new LinkedHashSet<>();
          for (Map.Entry<String, String> e : fields.entrySet()) {
            members.add(member(e.getKey(), e.getValue()));
          }
          jedis.del(key);
          jedis.sadd(key, members.toArray(new String[0]));
          return Status.OK;
        }
        case ZSET: {
          Map<String, Double> scored = new HashMap<>();
          for (Map.Entry<String, String> e : fields.entrySet()) {
            scored.put(member(e.getKey(), e.getValue()),
                (double) fieldIndex(e.getKey()));
          }
          jedis.del(key);
          jedis.zadd(key, scored);
          return Status.OK;
        }
        default:
          return Status.BAD_REQUEST;
      }
    } catch (RuntimeException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      UnifiedJedis jedis = client(key);
      Map<String, String> fields = StringByteIterator.getStringMap(values);
      switch (group) {
        case STRING:
          jedis.set(key, fields.values().iterator().next());
          return Status.OK;
        case HASH:
          jedis.hset(key, fields);
          return Status.OK;
        case LIST:
          for (Map.Entry<String, String> e : fields.entrySet()) {
            jedis.lset(key, fieldIndex(e.getKey()), e.getValue());
          }
          return Status.OK;
        case SET: {
          List<String> stale = new ArrayList<>();
          for (String m : jedis.smembers(key)) {
            int colon = m.indexOf(':');
            if (colon > 0 && fields.containsKey(m.substring(0, colon))) {
              stale.add(m);
            }
          }
          if (!stale.isEmpty()) {
            jedis.srem(key, stale.toArray(new String[0]));
          }
          List<String> fresh = new ArrayList<>();
          for (Map.Entry<String, String> e : fields.entrySet()) {
            fresh.add(member(e.getKey(), e.getValue()));
          }
          jedis.sadd(key, fresh.toArray(new String[0]));
          return Status.OK;
        }
        case ZSET:
          for (Map.Entry<String, String> e : fields.entrySet()) {
            double score = fieldIndex(e.getKey());
            jedis.zremrangeByScore(key, score, score);
            jedis.zadd(key, score, member(e.getKey(), e.getValue()));
          }
          return Status.OK;
        default:
          return Status.BAD_REQUEST;
      }
    } catch (RuntimeException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      return client(key).del(key) > 0 ? Status.OK : Status.NOT_FOUND;
    } catch (RuntimeException e) {
      return Status.ERROR;
    }
  }
}
